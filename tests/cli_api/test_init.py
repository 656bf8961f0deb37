"""POST /api/v1/cli/init: the advertiser rules, every validation of the CLI errors table in its order, the keys."""

from decimal import Decimal
from unittest import mock

import pytest

from cli_api.services import cli_token_create
from programs.keys import key_digest
from programs.models import Program, ProgramKey, Role
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory
from tests.helpers import platform_error

from .conftest import INIT, STATUS, bearer, error_of

pytestmark = pytest.mark.django_db

VALID = {"name": "Acme", "domain": "acme.example.com", "commission_type": "percent", "commission_rate": 20}


def init(api_client, token, body):
    return api_client.post(INIT, body, format="json", **bearer(token))


def test_it_creates_the_program_with_its_keys_and_returns_them_once(api_client, account, login_token):
    response = init(api_client, login_token, {**VALID, "duration_months": 0, "cookie_duration": 60})

    assert response.status_code == 201
    data = response.json()["data"]
    program = Program.objects.get()
    live = ProgramKey.objects.get(program=program, mode="live")
    test = ProgramKey.objects.get(program=program, mode="test")
    assert data == {
        "program": {
            "id": program.pk,
            "name": "Acme",
            "domain": "acme.example.com",
            "advertiser_id": account.workspace.pk,
            "advertiser_name": account.workspace.name,
            "commission_type": "percent",
            "commission_rate": 20,
            "duration_months": 0,
            "cookie_duration": 60,
            "api_token_masked": live.masked,
            "test_api_token_masked": test.masked,
            "created_at": program.created_at.isoformat(),
        },
        "api_key": data["api_key"],
        "test_api_key": data["test_api_key"],
    }
    assert data["api_key"].startswith("aff_") and live.digest == key_digest(data["api_key"])
    assert data["test_api_key"].startswith("aff_test_") and test.digest == key_digest(data["test_api_key"])
    assert (program.workspace, program.commission_rate) == (account.workspace, Decimal("20"))
    assert response["Cache-Control"] == "no-store"
    assert response.has_header("X-Request-ID")
    # The key works on the program-key routes at once.
    assert api_client.get(STATUS, **bearer(data["api_key"])).status_code == 200


def test_optional_fields_take_the_program_defaults(api_client, login_token):
    body = {**VALID, "commission_type": "fixed", "commission_rate": "12.5"}
    data = init(api_client, login_token, body).json()["data"]["program"]
    assert (data["commission_rate"], data["duration_months"], data["cookie_duration"]) == (12.5, 0, 30)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Missing required fields: name, domain, commission_type, commission_rate"),
        ({**VALID, "name": "  "}, "Missing required fields: name, domain, commission_type, commission_rate"),
        ({**VALID, "domain": None}, "Missing required fields: name, domain, commission_type, commission_rate"),
        (
            {k: v for k, v in VALID.items() if k != "commission_rate"},
            "Missing required fields: name, domain, commission_type, commission_rate",
        ),
        (
            {**VALID, "commission_type": "bogus"},
            "Invalid commission_type: bogus. Valid: percent, fixed, recurring_percent, recurring_fixed",
        ),
        ({**VALID, "commission_rate": 0}, "commission_rate must be a positive number"),
        ({**VALID, "commission_rate": -5}, "commission_rate must be a positive number"),
        ({**VALID, "commission_rate": "abc"}, "commission_rate must be a positive number"),
        ({**VALID, "commission_rate": True}, "commission_rate must be a positive number"),
        ({**VALID, "commission_rate": 100.5}, "commission_rate is a percentage for this type and cannot exceed 100"),
        (
            {**VALID, "commission_type": "recurring_percent", "commission_rate": 101},
            "commission_rate is a percentage for this type and cannot exceed 100",
        ),
        ({**VALID, "duration_months": -1}, "duration_months must be a whole number of months (0 = lifetime)"),
        ({**VALID, "duration_months": 1.5}, "duration_months must be a whole number of months (0 = lifetime)"),
        ({**VALID, "duration_months": "x"}, "duration_months must be a whole number of months (0 = lifetime)"),
        ({**VALID, "cookie_duration": 0}, "cookie_duration must be a whole number of days from 1 to 365"),
        ({**VALID, "cookie_duration": 366}, "cookie_duration must be a whole number of days from 1 to 365"),
        ({**VALID, "cookie_duration": "30d"}, "cookie_duration must be a whole number of days from 1 to 365"),
    ],
)
def test_each_invalid_input_is_a_400_with_the_spec_message_and_creates_nothing(api_client, login_token, body, message):
    response = init(api_client, login_token, body)
    assert response.status_code == 400
    assert response.json() == platform_error(400, "BadRequestError", message)
    assert not Program.objects.exists() and not ProgramKey.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # Missing fields come before everything else…
        ({"commission_type": "bogus", "commission_rate": -1}, "Missing required fields"),
        # …then the type, the rate, the percent cap, the duration and the cookie window, in the table's order.
        ({**VALID, "commission_type": "bogus", "commission_rate": -1}, "Invalid commission_type"),
        ({**VALID, "commission_rate": -1, "duration_months": -1}, "commission_rate must be a positive number"),
        ({**VALID, "commission_rate": 500, "duration_months": -1}, "commission_rate is a percentage"),
        ({**VALID, "duration_months": -1, "cookie_duration": 0}, "duration_months must be"),
    ],
)
def test_the_first_failing_check_in_table_order_answers(api_client, login_token, body, message):
    response = init(api_client, login_token, body)
    assert response.status_code == 400
    assert error_of(response)["message"].startswith(message)


def test_a_fixed_rate_may_exceed_100(api_client, login_token):
    response = init(api_client, login_token, {**VALID, "commission_type": "recurring_fixed", "commission_rate": 2500})
    assert response.status_code == 201


def test_an_account_without_an_owner_or_admin_membership_has_no_advertiser(api_client):
    member = UserFactory()
    MembershipFactory(user=member, role=Role.MEMBER)
    MembershipFactory(user=member, role=Role.OWNER, is_active=False)
    token = cli_token_create(user=member)[1]

    response = init(api_client, token, VALID)

    assert response.status_code == 403
    assert response.json() == platform_error(403, "ForbiddenError", "No advertiser found for this account")
    assert not Program.objects.exists()


def test_no_advertiser_comes_before_validation(api_client):
    token = cli_token_create(user=UserFactory())[1]
    response = init(api_client, token, {})
    assert error_of(response)["message"] == "No advertiser found for this account"


def test_an_admin_is_an_advertiser_too(api_client):
    admin = MembershipFactory(role=Role.ADMIN)
    token = cli_token_create(user=admin.user)[1]
    response = init(api_client, token, VALID)
    assert response.status_code == 201
    assert Program.objects.get().workspace == admin.workspace


@pytest.mark.parametrize("as_text", [False, True])
def test_a_matching_advertiser_id_is_accepted(api_client, account, login_token, as_text):
    advertiser_id = str(account.workspace.pk) if as_text else account.workspace.pk
    response = init(api_client, login_token, {**VALID, "advertiser_id": advertiser_id})
    assert response.status_code == 201
    assert Program.objects.get().workspace == account.workspace


def test_a_null_advertiser_id_counts_as_omitted(api_client, account, login_token):
    assert init(api_client, login_token, {**VALID, "advertiser_id": None}).status_code == 201


def test_omitted_it_is_the_oldest_advertiser_and_another_of_the_users_own_may_be_named(
    api_client, account, login_token
):
    second = MembershipFactory(user=account.user, role=Role.ADMIN).workspace
    assert init(api_client, login_token, VALID).json()["data"]["program"]["advertiser_id"] == account.workspace.pk
    named = init(api_client, login_token, {**VALID, "advertiser_id": second.pk})
    assert named.json()["data"]["program"]["advertiser_id"] == second.pk


@pytest.mark.parametrize("kind", ["stranger", "member-only", "garbage", "bool", "list"])
def test_an_advertiser_id_not_of_this_account_is_a_403(api_client, account, login_token, kind):
    member_of = MembershipFactory(user=account.user, role=Role.MEMBER).workspace
    advertiser_id = {
        "stranger": WorkspaceFactory().pk,
        "member-only": member_of.pk,
        "garbage": "abc",
        "bool": True,
        "list": [account.workspace.pk],
    }[kind]

    response = init(api_client, login_token, {**VALID, "advertiser_id": advertiser_id})

    assert response.status_code == 403
    assert response.json() == platform_error(
        403, "ForbiddenError", "advertiser_id does not match the authenticated account"
    )
    assert not Program.objects.exists()


def test_a_failure_is_a_500_with_the_request_id_and_creates_nothing(api_client, login_token):
    with mock.patch("programs.services.generate_key", side_effect=RuntimeError("boom")):
        response = init(api_client, login_token, VALID)

    assert response.status_code == 500
    request_id = response["X-Request-ID"]
    assert response.json() == platform_error(
        500,
        "InternalServerError",
        f"Failed to create program (request_id: {request_id})",
        details={"request_id": request_id},
    )
    assert not Program.objects.exists()


def test_malformed_json_is_a_400(api_client, login_token):
    response = api_client.post(INIT, "{nope", content_type="application/json", **bearer(login_token))
    assert response.status_code == 400
    assert error_of(response)["message"] == "Request body must be valid JSON"
