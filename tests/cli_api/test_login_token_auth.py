"""The login token on init, programs and logout: the spec's 401 wording per route, expiry, revocation, suspension."""

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone

from cli_api.models import CliToken
from cli_api.services import cli_token_create
from programs.models import Program
from tests.helpers import platform_error

from .conftest import INIT, LOGOUT, PROGRAMS, bearer, error_of

pytestmark = pytest.mark.django_db

VALID_INIT = {"name": "Acme", "domain": "acme.example.com", "commission_type": "percent", "commission_rate": 20}


def call(api_client, route: str, **headers):
    if route == INIT:
        return api_client.post(INIT, VALID_INIT, format="json", **headers)
    if route == LOGOUT:
        return api_client.post(LOGOUT, **headers)
    return api_client.get(PROGRAMS, **headers)


MESSAGES = {
    INIT: ("Authentication required", "Invalid or expired token", "User not found"),
    PROGRAMS: ("Missing Authorization header.", "Invalid or expired token.", "User not found"),
}


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
@pytest.mark.parametrize(
    "headers",
    [{}, {"HTTP_AUTHORIZATION": "Bearer "}, {"HTTP_AUTHORIZATION": "Basic YWRhOnB3"}, {"HTTP_AUTHORIZATION": "svcl_x"}],
    ids=["none", "empty-bearer", "basic", "no-scheme"],
)
def test_without_a_bearer_token_it_is_a_401(api_client, route, headers):
    response = call(api_client, route, **headers)
    assert response.status_code == 401
    assert response.json() == platform_error(401, "UnauthorizedError", MESSAGES[route][0])
    assert response["WWW-Authenticate"] == "Bearer"
    assert not Program.objects.exists()


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
def test_an_unknown_token_is_a_401(api_client, route):
    response = call(api_client, route, **bearer("svcl_nope"))
    assert response.status_code == 401
    assert error_of(response)["message"] == MESSAGES[route][1]


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
def test_a_program_key_is_not_a_login_token(api_client, route, program):
    response = call(api_client, route, **bearer(program.raw_api_key))
    assert response.status_code == 401
    assert error_of(response)["message"] == MESSAGES[route][1]


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
def test_an_expired_token_is_a_401(api_client, route, account, login_token):
    token = CliToken.objects.get()
    with time_machine.travel(token.expires_at, tick=False):
        response = call(api_client, route, **bearer(login_token))
    assert response.status_code == 401
    assert error_of(response)["message"] == MESSAGES[route][1]
    with time_machine.travel(token.expires_at - timedelta(seconds=1), tick=False):
        assert call(api_client, PROGRAMS, **bearer(login_token)).status_code == 200


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
def test_a_revoked_token_is_a_401(api_client, route, login_token):
    CliToken.objects.update(revoked_at=timezone.now())
    response = call(api_client, route, **bearer(login_token))
    assert response.status_code == 401
    assert error_of(response)["message"] == MESSAGES[route][1]


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
def test_a_token_whose_user_was_deleted_is_user_not_found(api_client, route, account, login_token):
    account.user.delete()
    assert CliToken.objects.get().user is None
    response = call(api_client, route, **bearer(login_token))
    assert response.status_code == 401
    assert error_of(response)["message"] == "User not found"


@pytest.mark.parametrize("route", [INIT, PROGRAMS])
def test_a_suspended_account_is_refused_even_with_a_valid_token(api_client, route, account, login_token):
    account.workspace.is_blocked = True
    account.workspace.save()
    response = call(api_client, route, **bearer(login_token))
    assert response.status_code == 403
    assert response.json() == platform_error(
        403, "ForbiddenError", "Your account has been suspended.", details={"code": "ACCOUNT_BLOCKED"}
    )
    assert not Program.objects.exists()


def test_a_deactivated_user_is_suspended(api_client, account, login_token):
    account.user.is_active = False
    account.user.save()
    response = call(api_client, PROGRAMS, **bearer(login_token))
    assert response.status_code == 403
    assert error_of(response)["details"] == {"code": "ACCOUNT_BLOCKED"}


def test_use_is_noted_at_most_once_a_minute(api_client, login_token):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        call(api_client, PROGRAMS, **bearer(login_token))
        assert CliToken.objects.get().last_used_at == start
    with time_machine.travel(start + timedelta(seconds=30), tick=False):
        call(api_client, PROGRAMS, **bearer(login_token))
        assert CliToken.objects.get().last_used_at == start
    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        call(api_client, PROGRAMS, **bearer(login_token))
        assert CliToken.objects.get().last_used_at == start + timedelta(seconds=61)


# --- POST /api/v1/cli/auth/logout -------------------------------------------------------------------------------


def test_logout_revokes_the_token_used_and_only_it(api_client, account, login_token):
    other_token = cli_token_create(user=account.user)[1]

    response = call(api_client, LOGOUT, **bearer(login_token))

    assert response.status_code == 200
    assert response.json() == {"data": {"revoked": True}}
    assert response.has_header("X-Request-ID")
    assert call(api_client, PROGRAMS, **bearer(login_token)).status_code == 401
    assert call(api_client, PROGRAMS, **bearer(other_token)).status_code == 200


def test_logout_twice_is_a_401(api_client, login_token):
    call(api_client, LOGOUT, **bearer(login_token))
    response = call(api_client, LOGOUT, **bearer(login_token))
    assert response.status_code == 401
    assert error_of(response)["message"] == "Invalid or expired token"


def test_logout_without_a_token_is_a_401(api_client):
    response = call(api_client, LOGOUT)
    assert response.status_code == 401
    assert error_of(response)["message"] == "Authentication required"


def test_a_suspended_account_can_still_log_out(api_client, account, login_token):
    account.workspace.is_blocked = True
    account.workspace.save()
    assert call(api_client, LOGOUT, **bearer(login_token)).status_code == 200
    assert CliToken.objects.get().revoked_at is not None


def test_a_deleted_account_can_still_log_out(api_client, account, login_token):
    account.user.delete()
    assert call(api_client, LOGOUT, **bearer(login_token)).status_code == 200
    assert CliToken.objects.get().revoked_at is not None


def test_a_logout_failure_is_a_500_with_the_request_id(api_client, login_token):
    with mock.patch("cli_api.api.views.cli_token_revoke", side_effect=RuntimeError("boom")):
        response = call(api_client, LOGOUT, HTTP_X_REQUEST_ID="req-logout-01", **bearer(login_token))
    assert response.status_code == 500
    assert error_of(response)["message"] == "Failed to log out (request_id: req-logout-01)"
    assert CliToken.objects.get().revoked_at is None
