"""Every route of the partner portal, listed from its URLconf, tried as an attacker who is not signed in to it:
signed out, and with an owner's dashboard session (which never opens the portal). A route that needs a partner
sends the browser to the sign-in page and shows nothing; the public ones (sign-in, invitation and reset links,
unsubscribe, the application page) answer without a session and never as anyone. A new route must be put in one
list or the other, so none is left out. What each signed-in page shows of another partner is tested with the page
(tests/portal/test_*.py: another partner's ids, another workspace's, a partner of two workspaces)."""

from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from portal import urls
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory

pytestmark = pytest.mark.django_db

# Routes anyone may open: each answers what it says without a portal session.
PUBLIC = {
    "portal-sign-in",
    "portal-invitation",
    "portal-password-reset",
    "portal-password-reset-confirm",
    "portal-unsubscribe",
    "portal-join",
    "portal-join-group",  # a group's application page (/join/<program id>/<group slug>)
    "portal-sign-out",  # ends a session if there is one; signed out it only sends to the sign-in page
}
ARGUMENTS = {"token": "not-a-token", "program_id": 1, "group_slug": "no-such-group"}


def routes() -> list[URLPattern]:
    return [pattern for pattern in urls.urlpatterns if isinstance(pattern, URLPattern)]


def path_of(pattern: URLPattern) -> str:
    wanted = {name: ARGUMENTS[name] for name in pattern.pattern.converters}
    return reverse(pattern.name, kwargs=wanted)


def test_every_route_is_either_public_or_for_a_signed_in_partner():
    names = {pattern.name for pattern in routes()}
    assert PUBLIC <= names, "a public route listed here no longer exists"
    # home, links, performance, commissions, balance, account and its two forms; payouts, its Stripe onboarding (the
    # POST that sends to Stripe, the return and the expired-link pages) and its manual rail's form
    assert len(names - PUBLIC) >= 13
    assert {
        "portal-payouts",
        "portal-payouts-stripe",
        "portal-payouts-stripe-return",
        "portal-payouts-stripe-refresh",
        "portal-payouts-manual",
    } <= names - PUBLIC


@pytest.mark.parametrize("pattern", [p for p in routes() if p.name not in PUBLIC], ids=lambda p: p.name)
@pytest.mark.parametrize("who", ["signed out", "an owner's dashboard session"])
def test_a_partners_route_sends_anyone_else_to_sign_in(pattern, who):
    client = Client()
    if who != "signed out":
        program = ProgramFactory.create()
        client.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user)
    path = path_of(pattern)
    for method in ("get", "post"):
        response = getattr(client, method)(path)
        if response.status_code == 405:
            continue  # the route does not take this method at all
        assert response.status_code == 302, (method, path, response.status_code)
        assert response["Location"].startswith("/portal/sign-in?next=" + quote(path, safe="")), response["Location"]
        assert b"@" not in response.content  # nothing of anyone's shown


@pytest.mark.parametrize("pattern", [p for p in routes() if p.name in PUBLIC], ids=lambda p: p.name)
def test_a_public_route_answers_without_a_session_and_never_500(pattern):
    path = path_of(pattern)
    for method in ("get", "post"):
        response = getattr(Client(), method)(path)
        assert response.status_code < 500, (method, path)
