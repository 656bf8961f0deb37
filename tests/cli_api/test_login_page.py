"""GET/POST /cli/login?state=…: the browser side of `svc login` (dashboard sign-in, then confirm or cancel)."""

from datetime import timedelta
from urllib.parse import quote

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from cli_api.models import CliLoginSession
from cli_api.services import user_code_for
from programs.keys import key_digest

from .conftest import POLL, start_login

pytestmark = pytest.mark.django_db


def page(state: str) -> str:
    return f"/cli/login?state={state}"


@pytest.fixture
def browser(account) -> Client:
    client = Client()
    client.force_login(account.user)
    return client


def session_of(state: str) -> CliLoginSession:
    return CliLoginSession.objects.get(state_digest=key_digest(state))


def test_signed_out_it_sends_you_to_sign_in_and_back(api_client):
    state = start_login(api_client)
    response = Client().get(page(state))
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=" + quote(page(state), safe="/")


def test_it_asks_the_signed_in_user_to_confirm_showing_the_code(api_client, browser):
    state = start_login(api_client)

    response = browser.get(page(state))

    assert response.status_code == 200
    html = response.content.decode()
    assert user_code_for(state) in html and "ada" in html
    assert 'name="action" value="approve"' in html and 'name="csrfmiddlewaretoken"' in html
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    assert response["X-Frame-Options"] == "DENY"
    assert session_of(state).authenticated_at is None  # looking changes nothing


def test_confirming_completes_the_login_for_the_signed_in_user(api_client, browser, account):
    state = start_login(api_client)

    response = browser.post(page(state), {"action": "approve"})

    assert response.status_code == 200
    assert 'data-mode="done"' in response.content.decode()
    assert session_of(state).user == account.user
    assert api_client.get(POLL, {"state": state}).json()["data"]["status"] == "complete"


def test_cancelling_refuses_the_login(api_client, browser):
    state = start_login(api_client)

    response = browser.post(page(state), {"action": "deny"})

    assert 'data-mode="denied"' in response.content.decode()
    assert session_of(state).user is None
    assert api_client.get(POLL, {"state": state}).json()["data"]["status"] == "denied"
    # A cancelled link cannot be confirmed afterwards.
    assert browser.post(page(state), {"action": "approve"}).status_code == 404


def test_a_post_without_the_csrf_token_is_refused(api_client, account):
    state = start_login(api_client)
    client = Client(enforce_csrf_checks=True)
    client.force_login(account.user)
    assert client.post(page(state), {"action": "approve"}).status_code == 403
    assert session_of(state).user is None


@pytest.mark.parametrize("state", ["", "no-such-state"])
def test_an_unknown_link_says_so(browser, state):
    response = browser.get(page(state))
    assert response.status_code == 404
    assert "not valid or was already used" in response.content.decode()


def test_a_used_link_says_so(api_client, browser):
    state = start_login(api_client)
    browser.post(page(state), {"action": "approve"})
    response = browser.get(page(state))
    assert response.status_code == 404


def test_an_expired_link_says_so(api_client, browser):
    state = start_login(api_client)
    with time_machine.travel(timezone.now() + timedelta(minutes=5), tick=False):
        response = browser.post(page(state), {"action": "approve"})
    assert response.status_code == 400
    assert "expired" in response.content.decode()
    assert session_of(state).user is None


def test_a_suspended_account_sees_why(api_client, browser, account):
    account.workspace.is_blocked = True
    account.workspace.save()
    state = start_login(api_client)

    response = browser.post(page(state), {"action": "approve"})

    assert response.status_code == 403
    assert "Your account has been suspended." in response.content.decode()
    assert session_of(state).user is None


def test_only_get_and_post_are_answered(api_client, browser):
    state = start_login(api_client)
    assert browser.put(page(state)).status_code == 405
