from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone

from cli_api.models import CliLoginSession, CliToken
from cli_api.services import login_session_deny
from programs.keys import key_digest
from tests.helpers import platform_error

from .conftest import POLL, PROGRAMS, bearer, sign_in, start_login

pytestmark = pytest.mark.django_db


def test_before_sign_in_it_answers_pending(api_client):
    state = start_login(api_client)

    response = api_client.get(POLL, {"state": state})

    assert response.status_code == 200
    session = CliLoginSession.objects.get()
    assert response.json() == {
        "data": {"status": "pending", "expires_at": session.expires_at.isoformat(), "interval": 2}
    }
    assert response.has_header("X-Request-ID")
    assert not CliToken.objects.exists()


def test_the_first_poll_after_sign_in_hands_out_the_token_once(api_client, account):
    state = start_login(api_client)
    sign_in(api_client, account.user, state)

    response = api_client.get(POLL, {"state": state})

    assert response.status_code == 200
    data = response.json()["data"]
    token = CliToken.objects.get()
    assert data == {
        "status": "complete",
        "expires_at": CliLoginSession.objects.get().expires_at.isoformat(),
        "token": data["token"],
        "token_type": "Bearer",
        "token_expires_at": token.expires_at.isoformat(),
        "user": {"id": account.user.pk, "username": "ada", "email": "ada@example.com"},
    }
    assert data["token"].startswith("svcl_")
    assert response["Cache-Control"] == "no-store"
    # Stored as its digest only, tied to the user and the session.
    assert token.digest == key_digest(data["token"]) and data["token"] not in (token.digest, token.last4)
    assert (token.user, token.session) == (account.user, CliLoginSession.objects.get())
    assert CliLoginSession.objects.get().consumed_at is not None
    # It works.
    assert api_client.get(PROGRAMS, **bearer(data["token"])).status_code == 200

    again = api_client.get(POLL, {"state": state})
    assert again.status_code == 400
    assert again.json() == platform_error(400, "BadRequestError", "Session already consumed")
    assert CliToken.objects.count() == 1


def test_the_token_lives_thirty_days_by_default(api_client, account):
    state = start_login(api_client)
    sign_in(api_client, account.user, state)
    api_client.get(POLL, {"state": state})
    token = CliToken.objects.get()
    assert token.expires_at - token.created_at == timedelta(days=30)


def test_the_token_lifetime_is_a_setting(api_client, account, settings):
    settings.CLI_TOKEN_LIFETIME_DAYS = 7
    state = start_login(api_client)
    sign_in(api_client, account.user, state)
    api_client.get(POLL, {"state": state})
    token = CliToken.objects.get()
    assert token.expires_at - token.created_at == timedelta(days=7)


def test_an_expired_session_answers_200_expired(api_client):
    state = start_login(api_client)
    with time_machine.travel(timezone.now() + timedelta(minutes=5), tick=False):
        response = api_client.get(POLL, {"state": state})
    assert response.status_code == 200
    assert response.json()["data"]["status"] == "expired"


def test_a_session_signed_in_but_collected_too_late_is_expired_and_hands_out_nothing(api_client, account):
    state = start_login(api_client)
    sign_in(api_client, account.user, state)
    with time_machine.travel(timezone.now() + timedelta(minutes=5, seconds=1), tick=False):
        response = api_client.get(POLL, {"state": state})
    assert response.json()["data"]["status"] == "expired"
    assert not CliToken.objects.exists()
    assert CliLoginSession.objects.get().consumed_at is None


def test_a_login_refused_in_the_browser_answers_denied(api_client):
    state = start_login(api_client)
    login_session_deny(session=CliLoginSession.objects.get())
    response = api_client.get(POLL, {"state": state})
    assert response.status_code == 200
    assert response.json()["data"]["status"] == "denied"


@pytest.mark.parametrize("query", [{}, {"state": ""}, {"state": "   "}])
def test_a_missing_state_is_a_400(api_client, query):
    response = api_client.get(POLL, query)
    assert response.status_code == 400
    assert response.json() == platform_error(400, "BadRequestError", "Missing state parameter")


def test_an_unknown_state_is_a_404(api_client):
    start_login(api_client)
    response = api_client.get(POLL, {"state": "not-a-session"})
    assert response.status_code == 404
    assert response.json() == platform_error(404, "NotFoundError", "Session not found")


def test_a_failure_is_a_500_and_hands_out_nothing(api_client, account):
    state = start_login(api_client)
    sign_in(api_client, account.user, state)
    with mock.patch("cli_api.services.cli_token_create", side_effect=RuntimeError("boom")):
        response = api_client.get(POLL, {"state": state}, HTTP_X_REQUEST_ID="req-poll-00001")

    assert response.status_code == 500
    assert response.json() == platform_error(
        500,
        "InternalServerError",
        "Failed to poll auth session (request_id: req-poll-00001)",
        details={"request_id": "req-poll-00001"},
    )
    # Rolled back with the failure: the next poll still gets the token.
    assert CliLoginSession.objects.get().consumed_at is None
    assert api_client.get(POLL, {"state": state}).json()["data"]["status"] == "complete"
