from datetime import timedelta
from unittest import mock

import jwt
import pytest
import time_machine
from django.utils import timezone

from cli_api import messages
from cli_api.models import CliLoginSession
from cli_api.tokens import SERVICE_AUDIENCE, SERVICE_ISSUER, _service_key
from programs.keys import key_digest
from tests.factories import MembershipFactory, UserFactory
from tests.helpers import platform_error

from .conftest import CALLBACK, POLL, error_of, service_id_token, sign_in, start_login
from .oidc import new_key

pytestmark = pytest.mark.django_db


def session_of(state: str) -> CliLoginSession:
    return CliLoginSession.objects.get(state_digest=key_digest(state))


def assert_untouched(state: str) -> None:
    session = session_of(state)
    assert (session.user, session.authenticated_at, session.consumed_at) == (None, None, None)


def test_it_records_the_signed_in_user(api_client, account):
    state = start_login(api_client)

    response = sign_in(api_client, account.user, state)

    assert response.status_code == 200
    assert response.json() == {"data": {"status": "authenticated"}}
    session = session_of(state)
    assert session.user == account.user and session.authenticated_at is not None
    assert session.consumed_at is None
    assert response.has_header("X-Request-ID")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"state": "abc"},
        {"id_token": "abc"},
        {"state": "", "id_token": "abc"},
        {"state": "abc", "id_token": "   "},
        {"state": 12, "id_token": "abc"},
        {"state": None, "id_token": None},
    ],
)
def test_missing_fields_are_a_400(api_client, body):
    response = api_client.post(CALLBACK, body, format="json")
    assert response.status_code == 400
    assert response.json() == platform_error(400, "BadRequestError", "Missing required fields: state, id_token")


def test_a_non_object_body_is_missing_fields(api_client):
    response = api_client.post(CALLBACK, ["state", "id_token"], format="json")
    assert response.status_code == 400
    assert error_of(response)["message"] == messages.CALLBACK_MISSING_FIELDS


def test_an_unknown_state_is_a_404(api_client, account):
    response = sign_in(api_client, account.user, "no-such-state")
    assert response.status_code == 404
    assert response.json() == platform_error(404, "NotFoundError", "Session not found or already used")


def test_a_used_session_is_a_404_and_keeps_its_first_user(api_client, account):
    state = start_login(api_client)
    assert sign_in(api_client, account.user, state).status_code == 200
    other = UserFactory()

    response = sign_in(api_client, other, state)

    assert response.status_code == 404
    assert error_of(response)["message"] == "Session not found or already used"
    assert session_of(state).user == account.user


def test_a_consumed_session_is_a_404(api_client, account):
    state = start_login(api_client)
    sign_in(api_client, account.user, state)
    assert api_client.get(POLL, {"state": state}).json()["data"]["status"] == "complete"

    response = sign_in(api_client, account.user, state)
    assert response.status_code == 404
    assert error_of(response)["message"] == "Session not found or already used"


def test_an_expired_session_is_a_400_and_stays_unsigned(api_client, account):
    state = start_login(api_client)
    with time_machine.travel(timezone.now() + timedelta(minutes=5), tick=False):
        token = service_id_token(account.user, state)
        response = api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json")

    assert response.status_code == 400
    assert response.json() == platform_error(400, "BadRequestError", "Session expired")
    assert_untouched(state)


def test_a_session_is_still_open_just_before_five_minutes(api_client, account):
    state = start_login(api_client)
    with time_machine.travel(timezone.now() + timedelta(minutes=5) - timedelta(seconds=1), tick=False):
        assert sign_in(api_client, account.user, state).status_code == 200


def test_a_deactivated_user_is_suspended(api_client, account):
    state = start_login(api_client)
    account.user.is_active = False
    account.user.save()

    response = sign_in(api_client, account.user, state)

    assert response.status_code == 403
    assert response.json() == platform_error(
        403, "ForbiddenError", "Your account has been suspended.", details={"code": "ACCOUNT_BLOCKED"}
    )
    assert_untouched(state)


def test_a_blocked_workspace_suspends_its_members(api_client, account):
    state = start_login(api_client)
    account.workspace.is_blocked = True
    account.workspace.save()

    response = sign_in(api_client, account.user, state)

    assert response.status_code == 403
    assert error_of(response)["details"] == {"code": "ACCOUNT_BLOCKED"}
    assert_untouched(state)


def test_an_inactive_membership_of_a_blocked_workspace_does_not_suspend(api_client, account):
    MembershipFactory(user=account.user, workspace__is_blocked=True, is_active=False)
    state = start_login(api_client)
    assert sign_in(api_client, account.user, state).status_code == 200


def test_a_user_without_any_workspace_may_sign_in(api_client):
    loner = UserFactory()
    state = start_login(api_client)
    assert sign_in(api_client, loner, state).status_code == 200


def _service_token(**overrides) -> str:
    now = int(timezone.now().timestamp())
    claims = {"iss": SERVICE_ISSUER, "aud": SERVICE_AUDIENCE, "sub": "1", "sid": "", "iat": now, "exp": now + 60}
    claims.update(overrides)
    return jwt.encode(claims, _service_key(), algorithm="HS256")


@pytest.mark.parametrize(
    "make_token",
    [
        lambda user, state: "not-a-jwt",
        # Minted for another login session.
        lambda user, state: service_id_token(user, "another-state"),
        lambda user, state: _service_token(sub=str(user.pk), sid=key_digest(state), aud="someone-else"),
        lambda user, state: _service_token(sub=str(user.pk), sid=key_digest(state), iss="urn:other"),
        lambda user, state: _service_token(sub=str(user.pk), sid=key_digest(state), exp=1),
        lambda user, state: _service_token(sub="999999", sid=key_digest(state)),
        lambda user, state: _service_token(sub="ada", sid=key_digest(state)),
        # Right claims, wrong key.
        lambda user, state: jwt.encode(
            jwt.decode(service_id_token(user, state), options={"verify_signature": False}),
            "not-the-secret-key-but-long-enough-for-hs256",
            algorithm="HS256",
        ),
        lambda user, state: jwt.encode(
            jwt.decode(service_id_token(user, state), options={"verify_signature": False}), "", algorithm="none"
        ),
    ],
    ids=["garbage", "other-session", "audience", "issuer", "expired", "no-user", "bad-sub", "wrong-key", "alg-none"],
)
def test_an_id_token_that_fails_verification_is_a_401_and_changes_nothing(api_client, account, make_token):
    state = start_login(api_client)

    response = api_client.post(CALLBACK, {"state": state, "id_token": make_token(account.user, state)}, format="json")

    assert response.status_code == 401
    assert error_of(response)["message"] == "Invalid or expired id_token"
    assert response["WWW-Authenticate"] == "Bearer"
    assert_untouched(state)


def test_the_service_token_lives_two_minutes(api_client, account):
    state = start_login(api_client)
    token = service_id_token(account.user, state)
    with time_machine.travel(timezone.now() + timedelta(minutes=2, seconds=31), tick=False):
        response = api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json")
    assert response.status_code == 401


def test_a_failure_is_a_500_with_the_request_id(api_client, account):
    state = start_login(api_client)
    with mock.patch("cli_api.services.account_is_suspended", side_effect=RuntimeError("boom")):
        response = sign_in(api_client, account.user, state)

    assert response.status_code == 500
    error = error_of(response)
    request_id = response["X-Request-ID"]
    assert error["message"] == f"Auth callback failed (request_id: {request_id})"
    assert error["details"] == {"request_id": request_id}
    assert_untouched(state)


# --- An OIDC provider's ID tokens ------------------------------------------------------------------------------


def test_a_provider_token_signs_in_the_account_with_that_email(api_client, account, oidc_provider):
    state = start_login(api_client)

    token = oidc_provider.id_token(email="ADA@example.com")
    response = api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json")

    assert response.status_code == 200
    assert session_of(state).user == account.user
    assert oidc_provider.requests == ["/jwks.json"]


@pytest.mark.parametrize("flag", [False, "false", None])
def test_a_provider_email_that_is_not_verified_is_a_403(api_client, account, oidc_provider, flag):
    state = start_login(api_client)

    token = oidc_provider.id_token(email_verified=flag)
    response = api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json")

    assert response.status_code == 403
    assert response.json() == platform_error(
        403,
        "ForbiddenError",
        "Your email address is not verified with your sign-in provider. Verify it there, then try again.",
        details={"code": "PROVIDER_EMAIL_NOT_VERIFIED"},
    )
    assert_untouched(state)


def test_a_provider_string_true_counts_as_verified(api_client, account, oidc_provider):
    state = start_login(api_client)
    token = oidc_provider.id_token(email_verified="true")
    assert api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json").status_code == 200


def test_a_suspended_account_is_refused_with_a_provider_token_too(api_client, account, oidc_provider):
    account.workspace.is_blocked = True
    account.workspace.save()
    state = start_login(api_client)

    response = api_client.post(CALLBACK, {"state": state, "id_token": oidc_provider.id_token()}, format="json")

    assert response.status_code == 403
    assert error_of(response)["details"] == {"code": "ACCOUNT_BLOCKED"}


def test_a_provider_email_matching_no_account_is_a_403(api_client, account, oidc_provider):
    state = start_login(api_client)
    token = oidc_provider.id_token(email="nobody@example.com")
    response = api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json")
    assert response.status_code == 403
    assert error_of(response)["message"] == "No account matches this sign-in"
    assert_untouched(state)


@pytest.mark.parametrize(
    "make_token",
    [
        lambda provider: provider.id_token(aud="another-client"),
        lambda provider: provider.id_token(iss="https://evil.example.test"),
        lambda provider: provider.id_token(exp=int(timezone.now().timestamp()) - 120),
        lambda provider: provider.id_token(key=new_key()),
        lambda provider: provider.id_token(kid="unknown-kid"),
        lambda provider: provider.id_token(email=None),
        lambda provider: provider.id_token(sub=None),
    ],
    ids=["audience", "issuer", "expired", "wrong-key", "unknown-kid", "no-email", "no-sub"],
)
def test_a_provider_token_that_fails_verification_is_a_401(api_client, account, oidc_provider, make_token):
    state = start_login(api_client)
    response = api_client.post(CALLBACK, {"state": state, "id_token": make_token(oidc_provider)}, format="json")
    assert response.status_code == 401
    assert error_of(response)["message"] == "Invalid or expired id_token"
    assert_untouched(state)


def test_provider_tokens_are_refused_when_no_provider_is_configured(api_client, account, oidc_provider, settings):
    token = oidc_provider.id_token()
    settings.OIDC_ISSUER = settings.OIDC_AUDIENCE = settings.OIDC_JWKS_URL = ""
    state = start_login(api_client)
    response = api_client.post(CALLBACK, {"state": state, "id_token": token}, format="json")
    assert response.status_code == 401


def test_an_unreachable_provider_is_a_500(api_client, account, oidc_provider, settings):
    settings.OIDC_JWKS_URL = "http://127.0.0.1:9/jwks.json"
    state = start_login(api_client)
    response = api_client.post(CALLBACK, {"state": state, "id_token": oidc_provider.id_token()}, format="json")
    assert response.status_code == 500
    assert error_of(response)["message"] == f"Auth callback failed (request_id: {response['X-Request-ID']})"
    assert_untouched(state)
