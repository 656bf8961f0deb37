import re

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client

from cli_api.models import CliLoginSession, CliToken
from cli_api.services import cli_token_create, login_session_start
from tests.factories import UserFactory

from .conftest import PROGRAMS, bearer

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    return client


def test_login_sessions_are_read_only(operator):
    session = login_session_start().session
    base = "/admin/cli_api/cliloginsession/"
    listing = operator.get(base)
    assert listing.status_code == 200
    assert session.state_digest not in listing.content.decode()
    detail = operator.get(f"{base}{session.pk}/change/")
    assert detail.status_code == 200 and session.state_digest not in detail.content.decode()
    assert operator.get(f"{base}add/").status_code == 403
    assert operator.post(f"{base}{session.pk}/change/", {"expires_at_0": "2000-01-01"}).status_code == 403
    assert operator.get(f"{base}{session.pk}/delete/").status_code == 403
    assert CliLoginSession.objects.get().expires_at == session.expires_at


def test_tokens_can_be_revoked_from_the_admin(operator, api_client, account):
    token, raw = cli_token_create(user=account.user)
    _, kept_raw = cli_token_create(user=account.user)
    base = "/admin/cli_api/clitoken/"
    listing = operator.get(base).content.decode()
    assert token.masked in listing and raw not in listing
    assert operator.get(f"{base}add/").status_code == 403

    response = operator.post(base, {"action": "revoke", ACTION_CHECKBOX_NAME: [token.pk]}, follow=True)

    assert "Revoked 1 token(s)." in response.content.decode()
    assert CliToken.objects.get(pk=token.pk).revoked_at is not None
    assert api_client.get(PROGRAMS, **bearer(raw)).status_code == 401
    assert api_client.get(PROGRAMS, **bearer(kept_raw)).status_code == 200


def test_every_cli_admin_page_renders(operator, api_client, account, program):
    login_session_start()
    cli_token_create(user=account.user)
    api_client.post("/api/v1/cli/test-event", **bearer(program.raw_api_key))
    for model in ("cliloginsession", "clitoken", "clitestrun", "clitestfixture"):
        listing = operator.get(f"/admin/cli_api/{model}/")
        assert listing.status_code == 200, model
        first = re.search(rf'href="(/admin/cli_api/{model}/\d+/change/[^"]*)"', listing.content.decode())
        assert first is not None, model
        assert operator.get(first.group(1)).status_code == 200, model
