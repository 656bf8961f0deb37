from unittest import mock

import pytest

from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.helpers import platform_error

from .conftest import PROGRAMS, bearer

pytestmark = pytest.mark.django_db


def test_it_lists_the_accounts_programs_with_masked_keys_only(api_client, account, login_token):
    mine = ProgramFactory(workspace=account.workspace, name="Mine", commission_rate="12.5")
    shared = MembershipFactory(user=account.user, role=Role.MEMBER).workspace
    theirs = ProgramFactory(workspace=shared, name="Shared")
    ProgramFactory(name="Stranger's")
    MembershipFactory(user=account.user, role=Role.OWNER, is_active=False)
    ProgramFactory(workspace=account.user.memberships.get(is_active=False).workspace, name="Left")

    response = api_client.get(PROGRAMS, **bearer(login_token))

    assert response.status_code == 200
    data = response.json()["data"]
    assert [item["name"] for item in data] == ["Mine", "Shared"]
    assert data[0] == {
        "id": mine.pk,
        "name": "Mine",
        "domain": mine.domain,
        "advertiser_id": account.workspace.pk,
        "advertiser_name": account.workspace.name,
        "commission_type": "percent",
        "commission_rate": 12.5,
        "duration_months": 0,
        "cookie_duration": 30,
        "api_token_masked": mine.api_token_masked,
        "test_api_token_masked": mine.keys.get(mode="test").masked,
        "created_at": mine.created_at.isoformat(),
        "role": "owner",
    }
    assert data[1]["role"] == "member" and data[1]["id"] == theirs.pk
    text = response.content.decode()
    for program in (mine, theirs):
        assert program.raw_api_key not in text and program.raw_test_api_key not in text
    assert data[0]["api_token_masked"].endswith(mine.raw_api_key[-4:])
    assert response.has_header("X-Request-ID")


def test_an_account_without_programs_gets_an_empty_list(api_client, login_token):
    response = api_client.get(PROGRAMS, **bearer(login_token))
    assert response.json() == {"data": []}


def test_the_number_of_queries_does_not_grow_with_programs(api_client, account, login_token, django_assert_num_queries):
    for _ in range(3):
        ProgramFactory(workspace=account.workspace)
    # token (with user), suspension check, last_used_at update, memberships, programs (+ workspace), keys
    with django_assert_num_queries(6):
        assert len(api_client.get(PROGRAMS, **bearer(login_token)).json()["data"]) == 3


def test_a_failure_is_a_500_with_the_request_id(api_client, login_token):
    with mock.patch("cli_api.api.views.account_programs_list", side_effect=RuntimeError("boom")):
        response = api_client.get(PROGRAMS, HTTP_X_REQUEST_ID="req-programs-1", **bearer(login_token))
    assert response.status_code == 500
    assert response.json() == platform_error(
        500,
        "InternalServerError",
        "Failed to list programs (request_id: req-programs-1)",
        details={"request_id": "req-programs-1"},
    )
