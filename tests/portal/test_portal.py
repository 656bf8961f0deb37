"""The partner portal's first pages: an owner invites a partner by email, the partner sets a password from the
one-time link and signs in to see the programs they belong to, with their terms. The portal's sign-in is its own:
an owner's dashboard session never opens it, and a partner's never opens the dashboard. Partners are untrusted:
every page is tried signed out, as another partner, and across workspaces, and every form without its CSRF token."""

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.core.cache import caches
from django.test import Client
from django.utils import timezone

from portal import services
from portal.session import COOKIE, COOKIE_PATH
from programs.models import PartnerAccount, PartnerInvitation, PartnerProgram, Role
from tests.factories import MembershipFactory, PartnerFactory, ProgramFactory

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
LINK = re.compile(r"/portal/invitations/[A-Za-z0-9_-]+")


@pytest.fixture(autouse=True)
def counts_cleared(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", commission_type="recurring_percent", commission_rate=20, duration_months=12)


def signed_in_owner(program, role=Role.OWNER) -> Client:
    client = Client()
    client.force_login(MembershipFactory.create(workspace=program.workspace, role=role).user)
    return client


def invite(program, email="pat@example.com", name="Pat") -> str:
    """The invitation link an owner's invitation emails (its path)."""
    mail.outbox.clear()
    response = signed_in_owner(program).post(f"/programs/{program.pk}/partners/invite", {"name": name, "email": email})
    assert response.status_code == 302
    [message] = mail.outbox
    assert message.to == [email]
    found = LINK.search(str(message.body))
    assert found is not None
    return found.group(0)


def joined(link: str, password: str = PASSWORD) -> Client:
    """A browser that followed the invitation link and set its password."""
    browser = Client()
    response = browser.post(link, {"password": password, "password2": password})
    assert response.status_code == 302 and response["Location"] == COOKIE_PATH
    return browser


def test_an_owner_invites_and_the_partner_joins_with_a_password_and_sees_the_programs_terms(program):
    link = invite(program)
    browser = Client()
    page = browser.get(link)
    assert page.status_code == 200 and b"Choose a password" in page.content
    mismatch = browser.post(link, {"password": PASSWORD, "password2": PASSWORD + "x"})
    assert mismatch.status_code == 400 and b"The two passwords differ." in mismatch.content
    assert not PartnerAccount.objects.exists()

    response = browser.post(link, {"password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/portal/"
    cookie = response.cookies[COOKIE]
    assert cookie["path"] == COOKIE_PATH and cookie["httponly"] and cookie["samesite"] == "Lax"
    account = PartnerAccount.objects.get()
    assert account.email == "pat@example.com" and account.password != PASSWORD
    partner = account.partners.get()
    assert (partner.workspace_id, partner.name) == (program.workspace_id, "Pat")
    assert PartnerProgram.objects.filter(partner=partner, program=program).exists()
    assert PartnerInvitation.objects.get().accepted_at is not None

    home = browser.get("/portal/")
    assert home.status_code == 200
    text = home.content.decode()
    for shown in ("Acme Pro", "20% of each sale", "renewals pay for 12 months", "30 days", "pat@example.com"):
        assert shown in text


def test_the_link_works_once(program):
    link = invite(program)
    joined(link)
    again = Client().post(link, {"password": PASSWORD, "password2": PASSWORD})
    assert again.status_code == 410 and b"Invitation already used" in again.content
    assert Client().get(link).status_code == 410
    assert PartnerAccount.objects.count() == 1


def test_an_expired_or_unknown_link_is_refused_and_changes_nothing(program):
    link = invite(program)
    PartnerInvitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = Client().post(link, {"password": PASSWORD, "password2": PASSWORD})
    assert expired.status_code == 410 and b"Invitation expired" in expired.content
    assert Client().get("/portal/invitations/not-a-token").status_code == 404
    assert Client().get("/portal/invitations/" + "x" * 500).status_code == 404
    assert not PartnerAccount.objects.exists() and not PartnerProgram.objects.exists()


def test_the_link_is_stored_only_as_its_digest(program):
    link = invite(program)
    token = link.rsplit("/", 1)[1]
    invitation = PartnerInvitation.objects.get()
    assert token not in invitation.digest and len(invitation.digest) == 64


def test_one_sign_in_for_programs_of_two_workspaces(program):
    joined(invite(program))
    other = ProgramFactory(name="Other Co")
    link = invite(other)
    browser = Client()
    assert b"sign in with its password" in browser.get(link).content
    wrong = browser.post(link, {"password": "not the password"})
    assert wrong.status_code == 400 and not PartnerProgram.objects.filter(program=other).exists()
    assert browser.post(link, {"password": PASSWORD}).status_code == 302
    text = browser.get("/portal/").content.decode()
    assert "Acme Pro" in text and "Other Co" in text
    assert PartnerAccount.objects.count() == 1 and PartnerAccount.objects.get().partners.count() == 2


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_owners_and_admins_invite(program, role):
    response = signed_in_owner(program, role).post(
        f"/programs/{program.pk}/partners/invite", {"email": "sam@example.com"}
    )
    assert response.status_code == 302 and PartnerInvitation.objects.filter(program=program).count() == 1


def test_a_member_an_outsider_and_a_signed_out_visitor_cannot_invite(program):
    url = f"/programs/{program.pk}/partners/invite"
    assert signed_in_owner(program, Role.MEMBER).post(url, {"email": "a@example.com"}).status_code == 403
    outsider = Client()
    outsider.force_login(MembershipFactory.create(role=Role.OWNER).user)
    assert outsider.post(url, {"email": "a@example.com"}).status_code == 403
    signed_out = Client().post(url, {"email": "a@example.com"})
    assert signed_out.status_code == 302 and signed_out["Location"].startswith("/accounts/login/")
    assert not PartnerInvitation.objects.exists() and not mail.outbox


def test_a_bad_email_invites_nobody(program):
    response = signed_in_owner(program).post(f"/programs/{program.pk}/partners/invite", {"email": "not an email"})
    assert response.status_code == 302
    assert not PartnerInvitation.objects.exists() and not mail.outbox


def test_an_invited_email_already_a_partner_of_the_workspace_is_that_partner(program):
    existing = PartnerFactory(workspace=program.workspace, email="Pat@Example.com", name="Pat Existing")
    joined(invite(program, email="pat@example.com", name="Someone else"))
    existing.refresh_from_db()
    assert existing.account is not None and existing.account.email == "pat@example.com"


# --- Isolation --------------------------------------------------------------------------------------------------


def test_a_partner_sees_only_their_own_programs(program):
    pat = joined(invite(program, email="pat@example.com"))
    other = ProgramFactory(name="Secret Other Program")
    joined(invite(other, email="sam@example.com"))
    text = pat.get("/portal/").content.decode()
    assert "Acme Pro" in text and "Secret Other Program" not in text


@pytest.mark.parametrize("path", ["/portal/"])
def test_signed_out_visitors_go_to_the_sign_in_page(path):
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"] == f"/portal/sign-in?next={path.replace('/', '%2F')}"


def test_an_owners_dashboard_session_does_not_open_the_portal(program):
    owner = signed_in_owner(program)
    response = owner.get("/portal/")
    assert response.status_code == 302 and response["Location"].startswith("/portal/sign-in")


def test_a_partners_portal_session_does_not_open_the_dashboard(program):
    pat = joined(invite(program))
    for path in ("/", f"/programs/{program.pk}/partners"):
        response = pat.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    # The portal's cookie is not even sent outside /portal/.
    assert pat.cookies[COOKIE]["path"] == "/portal/"


def test_a_forged_or_foreign_session_cookie_is_a_signed_out_visitor(program):
    browser = Client()
    browser.cookies[COOKIE] = "x" * 32
    assert browser.get("/portal/").status_code == 302
    browser.cookies[COOKIE] = "y" * 5000
    assert browser.get("/portal/").status_code == 302


def test_sign_out_everywhere_ends_every_session(program):
    link = invite(program)
    first = joined(link)
    second = Client()
    assert second.post("/portal/sign-in", {"email": "pat@example.com", "password": PASSWORD}).status_code == 302
    assert second.get("/portal/").status_code == 200
    assert first.post("/portal/sign-out-everywhere").status_code == 302
    assert first.get("/portal/").status_code == 302
    assert second.get("/portal/").status_code == 302


def test_sign_out_ends_this_session(program):
    pat = joined(invite(program))
    assert pat.post("/portal/sign-out").status_code == 302
    assert pat.get("/portal/").status_code == 302


# --- Sign-in ----------------------------------------------------------------------------------------------------


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(program):
    joined(invite(program))
    wrong = Client().post("/portal/sign-in", {"email": "pat@example.com", "password": "wrong password"})
    unknown = Client().post("/portal/sign-in", {"email": "nobody@example.com", "password": "wrong password"})
    assert wrong.status_code == unknown.status_code == 400
    # Each answer echoes the email sent and carries its own CSRF token; nothing else differs.
    strip = re.compile(rb'value="[^"]*@example.com"|name="csrfmiddlewaretoken" value="[^"]*"')
    assert strip.sub(b"", wrong.content) == strip.sub(b"", unknown.content)


def test_sign_in_goes_back_to_a_portal_page_only(program):
    joined(invite(program))
    for asked, landed in (
        ("/portal/", "/portal/"),
        ("https://evil.example/portal/", "/portal/"),
        ("//evil", "/portal/"),
    ):
        response = Client().post("/portal/sign-in", {"email": "pat@example.com", "password": PASSWORD, "next": asked})
        assert response.status_code == 302 and response["Location"] == landed


def test_sign_in_attempts_are_rate_limited(program, settings):
    settings.RATELIMIT_SCALE = 1
    answers = [
        Client().post("/portal/sign-in", {"email": "pat@example.com", "password": "guess"}).status_code
        for _ in range(11)
    ]
    assert answers[:10] == [400] * 10 and answers[10] == 429


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("/portal/sign-in", {"email": "pat@example.com", "password": PASSWORD}),
        ("/portal/sign-out", {}),
        ("/portal/sign-out-everywhere", {}),
    ],
)
def test_portal_forms_need_their_csrf_token(program, path, form):
    joined(invite(program))
    browser = Client(enforce_csrf_checks=True)
    assert browser.post(path, form).status_code == 403


def test_the_invitation_form_needs_its_csrf_token(program):
    link = invite(program)
    response = Client(enforce_csrf_checks=True).post(link, {"password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 403 and not PartnerAccount.objects.exists()


def test_an_account_made_with_a_short_password_is_refused(program):
    link = invite(program)
    response = Client().post(link, {"password": "short", "password2": "short"})
    assert response.status_code == 400 and not PartnerAccount.objects.exists()
    assert services.MIN_PASSWORD_LENGTH == 10
