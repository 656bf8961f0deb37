"""Stripe Connect through the real stripe library; only its HTTP client is replaced."""

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import stripe
from stripe._http_client import HTTPClient

from programs.models import Program, Role
from tests.factories import MembershipFactory, ProgramFactory, UserFactory

pytestmark = pytest.mark.django_db


class FakeStripeHttp(HTTPClient):
    name = "fake"

    def __init__(self, responses):
        super().__init__()
        self.responses = responses
        self.calls: list[tuple[str, str, str]] = []

    def request(self, method, url, headers, post_data=None, *, _usage=None):
        self.calls.append((method, url, post_data or ""))
        status, body = self.responses[urlsplit(url).path]
        return json.dumps(body), status, {}

    def close(self):
        pass


@pytest.fixture(autouse=True)
def stripe_settings(settings):
    settings.STRIPE_CLIENT_ID = "ca_test_123"
    settings.STRIPE_SECRET_KEY = "sk_test_123"


@pytest.fixture
def fake_stripe(monkeypatch):
    def install(responses):
        fake = FakeStripeHttp(responses)
        monkeypatch.setattr(stripe, "default_http_client", fake)
        return fake

    return install


@pytest.fixture
def owner_client(client):
    program = ProgramFactory()
    user = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    client.force_login(user)
    client.program = program
    return client


def start(client) -> str:
    response = client.post(f"/programs/{client.program.pk}/stripe/connect")
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith("https://connect.stripe.com/oauth/authorize?")
    query = parse_qs(urlsplit(location).query)
    assert query["client_id"] == ["ca_test_123"] and query["scope"] == ["read_write"]
    return query["state"][0]


def test_connecting_stores_the_account(owner_client, fake_stripe):
    fake = fake_stripe(
        {"/oauth/token": (200, {"stripe_user_id": "acct_Connected1", "livemode": False, "scope": "read_write"})}
    )
    state = start(owner_client)
    response = owner_client.get("/stripe/oauth/callback", {"code": "ac_123", "state": state})
    assert response.status_code == 302
    program = Program.objects.get(pk=owner_client.program.pk)
    assert program.stripe_account_id == "acct_Connected1" and program.stripe_connected_at
    [(method, url, body)] = fake.calls
    assert method == "post" and url.endswith("/oauth/token") and "code=ac_123" in body
    page = owner_client.get(f"/programs/{program.pk}/stripe").content.decode()
    assert "acct_Connected1" in page


def test_a_forged_state_connects_nothing(owner_client, fake_stripe):
    fake = fake_stripe({})
    owner_client.get("/stripe/oauth/callback", {"code": "ac_123", "state": "forged"})
    assert fake.calls == [] and not Program.objects.get(pk=owner_client.program.pk).stripe_account_id


def test_another_users_state_connects_nothing(owner_client, fake_stripe, client):
    fake = fake_stripe({})
    state = start(owner_client)
    other = MembershipFactory(workspace=owner_client.program.workspace, role=Role.OWNER).user
    owner_client.force_login(other)
    owner_client.get("/stripe/oauth/callback", {"code": "ac_123", "state": state})
    assert fake.calls == [] and not Program.objects.get(pk=owner_client.program.pk).stripe_account_id


def test_a_stripe_refusal_is_shown_and_nothing_stored(owner_client, fake_stripe):
    fake_stripe({"/oauth/token": (400, {"error": "invalid_grant", "error_description": "Authorization code expired"})})
    state = start(owner_client)
    response = owner_client.get("/stripe/oauth/callback", {"code": "ac_old", "state": state}, follow=True)
    assert "Stripe refused the connection" in response.content.decode()
    assert not Program.objects.get(pk=owner_client.program.pk).stripe_account_id


def test_an_account_connects_to_one_program_only(owner_client, fake_stripe):
    ProgramFactory(stripe_account_id="acct_Taken")
    fake_stripe({"/oauth/token": (200, {"stripe_user_id": "acct_Taken"})})
    state = start(owner_client)
    response = owner_client.get("/stripe/oauth/callback", {"code": "ac_1", "state": state}, follow=True)
    assert "already connected" in response.content.decode()
    assert not Program.objects.get(pk=owner_client.program.pk).stripe_account_id


def test_disconnecting_revokes_and_forgets(owner_client, fake_stripe):
    Program.objects.filter(pk=owner_client.program.pk).update(stripe_account_id="acct_Connected1")
    fake = fake_stripe({"/oauth/deauthorize": (200, {"stripe_user_id": "acct_Connected1"})})
    response = owner_client.post(f"/programs/{owner_client.program.pk}/stripe/disconnect")
    assert response.status_code == 302
    assert not Program.objects.get(pk=owner_client.program.pk).stripe_account_id
    [(_, url, body)] = fake.calls
    assert url.endswith("/oauth/deauthorize") and "stripe_user_id=acct_Connected1" in body


def test_a_member_cannot_connect(client):
    program = ProgramFactory()
    client.force_login(MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user)
    assert client.post(f"/programs/{program.pk}/stripe/connect").status_code == 403


def test_an_outsider_cannot_see_the_connection(client):
    program = ProgramFactory()
    client.force_login(UserFactory())
    assert client.get(f"/programs/{program.pk}/stripe").status_code == 403


def test_signed_out_goes_to_sign_in(client):
    program = ProgramFactory()
    response = client.get(f"/programs/{program.pk}/stripe")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
