"""The portal's Links page (/portal/links): a partner sees their referral links with the full URL, a copy button
and a QR code, and, where a program allows it, makes a link with a code of their own. Partners are untrusted: the
page is tried signed out, with an owner's dashboard session, as another partner, across workspaces, with bad form
values and without the CSRF token."""

import re
from xml.etree import ElementTree

import pytest
from django.core import mail
from django.core.cache import caches
from django.test import Client

from portal import links as portal_links
from portal.session import COOKIE_PATH
from programs.models import PartnerAccount, ReferralLink
from tests.factories import MembershipFactory, PartnerProgramFactory, ProgramFactory, ReferralLinkFactory

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
LINK = re.compile(r"/portal/invitations/[A-Za-z0-9_-]+")
SVG = re.compile(r"<svg\b[^>]*>.*?</svg>", re.S)


@pytest.fixture(autouse=True)
def counts_cleared(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()


def invite(program, email="pat@example.com", name="Pat") -> str:
    """The invitation link an owner's invitation emails (its path), as in test_portal.py."""
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    mail.outbox.clear()
    response = owner.post(f"/programs/{program.pk}/partners/invite", {"name": name, "email": email})
    assert response.status_code == 302
    found = LINK.search(str(mail.outbox[0].body))
    assert found is not None
    return found.group(0)


def joined(program, email="pat@example.com") -> Client:
    """A browser of the partner `email`, who followed an invitation to `program` and set a password (or, with an
    account already, signed in with it)."""
    link = invite(program, email=email)
    browser = Client()
    has_account = PartnerAccount.objects.filter(email=email).exists()
    form = {"password": PASSWORD} if has_account else {"password": PASSWORD, "password2": PASSWORD}
    response = browser.post(link, form)
    assert response.status_code == 302 and response["Location"] == COOKIE_PATH
    return browser


def partner_of(program, email="pat@example.com"):
    return PartnerAccount.objects.get(email=email).partners.get(workspace=program.workspace)


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", domain="shop.acme.test", partner_codes_allowed=True)


@pytest.fixture
def pat(program) -> Client:
    return joined(program)


def page(browser: Client) -> str:
    response = browser.get("/portal/links")
    assert response.status_code == 200
    return response.content.decode()


def create(browser: Client, program_id, code: str):
    return browser.post("/portal/links", {"program": program_id, "code": code})


# --- The page ---------------------------------------------------------------------------------------------------


def test_the_page_lists_the_partners_links_with_url_copy_button_and_qr_code(program, pat):
    partner = partner_of(program)
    on = ReferralLinkFactory(program=program, partner=partner, short_link="pat-main")
    off = ReferralLinkFactory(program=program, partner=partner, short_link="pat_old", is_active=False)
    text = page(pat)

    assert "Acme Pro" in text
    for link in (on, off):
        url = f"https://shop.acme.test/?aff={link.short_link}"
        assert f'<code class="link-url" id="url-{link.pk}">{url}</code>' in text
        assert f'data-copy-target="#url-{link.pk}" hidden>Copy link</button>' in text
        # The QR code drawn from that very URL.
        assert portal_links.qr_svg(url) in text
    assert "Active" in text and "Off" in text
    # One QR code per link, each a well-formed SVG drawing.
    drawings = SVG.findall(text)
    assert len(drawings) == 2 and drawings[0] != drawings[1]
    for drawing in drawings:
        root = ElementTree.fromstring(drawing)
        assert root.tag == "svg" and int(root.get("width", "0")) > 0 and root.findall(".//path")
    assert "js/portal.js" in text


def test_the_qr_code_is_the_full_url():
    svg = portal_links.qr_svg("https://shop.acme.test/?aff=pat-main")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert portal_links.qr_svg("") == ""


def test_a_code_is_url_encoded_and_a_domain_with_a_scheme_or_path_gives_its_host():
    program = ProgramFactory.build(domain=" https://Shop.example.com/landing ")
    assert portal_links.link_url(program, "a&b c") == "https://Shop.example.com/?aff=a%26b+c"
    program.domain = "shop.example.com:8443"
    assert portal_links.link_url(program, "x") == "https://shop.example.com:8443/?aff=x"
    program.domain = "bücher.example"
    assert portal_links.link_url(program, "x") == "https://xn--bcher-kva.example/?aff=x"
    for unreadable in ("", "   ", "<script>", "http://[::1"):
        program.domain = unreadable
        assert portal_links.link_url(program, "x") == ""


def test_a_program_whose_site_address_cannot_be_read_shows_no_url_nor_qr(program, pat):
    program.domain = "not a host"
    program.save()
    ReferralLinkFactory(program=program, partner=partner_of(program), short_link="pat-main")
    text = page(pat)
    assert "pat-main" in text and "site address is not set up" in text and "<svg" not in text


def test_a_partner_of_two_workspaces_sees_both_and_nothing_else(program, pat):
    ReferralLinkFactory(program=program, partner=partner_of(program), short_link="pat-acme")
    other = ProgramFactory(name="Other Co", domain="other.test")
    joined(other)  # the same account joins a program of another workspace
    ReferralLinkFactory(program=other, partner=partner_of(other), short_link="pat-other")
    ReferralLinkFactory(program=other, short_link="someone-elses")
    text = page(pat)
    assert "Acme Pro" in text and "Other Co" in text
    assert "https://shop.acme.test/?aff=pat-acme" in text and "https://other.test/?aff=pat-other" in text
    assert "someone-elses" not in text
    assert len(SVG.findall(text)) == 2


def test_another_partners_links_are_never_shown(program, pat):
    sam = joined(program, email="sam@example.com")
    ReferralLinkFactory(program=program, partner=partner_of(program, "sam@example.com"), short_link="sam-secret")
    ReferralLinkFactory(program=program, partner=partner_of(program), short_link="pat-own")
    # Another workspace's program, with a partner of its own.
    ReferralLinkFactory(short_link="far-away")
    text = page(pat)
    assert "pat-own" in text and "sam-secret" not in text and "far-away" not in text
    assert "sam-secret" in page(sam) and "pat-own" not in page(sam)


def test_links_of_programs_not_enrolled_in_and_synthetic_links_are_not_shown(program, pat):
    partner = partner_of(program)
    # A link of this partner row in a program of its workspace it is not enrolled in.
    unenrolled = ProgramFactory(workspace=program.workspace, name="Not Enrolled")
    ReferralLink.objects.create(program=unenrolled, partner=partner, short_link="not-enrolled")
    ReferralLinkFactory(program=program, partner=partner, short_link="svc-verify-1", is_synthetic=True)
    text = page(pat)
    assert "not-enrolled" not in text and "Not Enrolled" not in text and "svc-verify-1" not in text


def test_a_partner_without_links_is_told_so(program, pat):
    text = page(pat)
    assert "No links in this program yet" in text and "New link with my own code" in text
    program.partner_codes_allowed = False
    program.save()
    text = page(pat)
    assert "The program's owner makes them" in text and "New link with my own code" not in text


# --- Own codes --------------------------------------------------------------------------------------------------


def test_a_partner_makes_a_link_with_their_own_code(program, pat):
    response = create(pat, program.pk, "  Pat-Summer_24 ")
    link = ReferralLink.objects.get(short_link="Pat-Summer_24")
    assert response.status_code == 303 and response["Location"] == f"/portal/links?created={link.pk}#link-{link.pk}"
    assert link.partner == partner_of(program) and link.program == program and link.is_active
    text = pat.get(response["Location"]).content.decode()
    assert "Your new link <code>Pat-Summer_24</code> is ready." in text
    assert "https://shop.acme.test/?aff=Pat-Summer_24" in text


def test_the_new_link_takes_clicks_at_once(program, pat):
    from tracking.link_cache import link_target_get

    assert link_target_get("pat-new") is None  # an unknown code is never cached
    assert create(pat, program.pk, "pat-new").status_code == 303
    target = link_target_get("pat-new")
    assert target is not None and target.is_active and target.partner_id == partner_of(program).pk


def test_a_link_of_a_partner_of_two_workspaces_goes_to_the_programs_workspace(program, pat):
    other = ProgramFactory(name="Other Co", partner_codes_allowed=True)
    joined(other)
    assert create(pat, other.pk, "pat-other").status_code == 303
    link = ReferralLink.objects.get(short_link="pat-other")
    assert link.partner == partner_of(other) and link.partner.workspace_id == other.workspace_id


def test_the_created_parameter_shows_only_the_partners_own_link(program, pat):
    theirs = ReferralLinkFactory(program=program, short_link="not-yours")
    text = pat.get(f"/portal/links?created={theirs.pk}").content.decode()
    assert "not-yours" not in text and "is ready" not in text
    for junk in ("x", "9" * 40, ""):
        assert pat.get("/portal/links", {"created": junk}).status_code == 200
    assert pat.get("/portal/links", {"created": "\x00"}).status_code == 400  # NUL bytes are refused before views


def _refused(browser: Client, program_id, code: str, message: str) -> None:
    before = ReferralLink.objects.count()
    response = create(browser, program_id, code)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert ReferralLink.objects.count() == before


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ab", portal_links.CODE_LENGTH),
        ("", portal_links.CODE_LENGTH),
        ("a" * 65, portal_links.CODE_LENGTH),
        ("pat summer", portal_links.CODE_CHARACTERS),
        ("pat/summer", portal_links.CODE_CHARACTERS),
        ("pat&x=1", portal_links.CODE_CHARACTERS),
        ("pât-été", portal_links.CODE_CHARACTERS),
        ("٣٣٣", portal_links.CODE_CHARACTERS),
        ("pat\x00code", portal_links.CODE_CHARACTERS),
        ("\x00\x00\x00", portal_links.CODE_CHARACTERS),
    ],
)
def test_a_bad_code_is_refused_with_its_reason(program, pat, code, message):
    _refused(pat, program.pk, code, message)


def test_a_code_of_three_and_of_sixty_four_characters_is_accepted(program, pat):
    assert create(pat, program.pk, "abc").status_code == 303
    assert create(pat, program.pk, "b" * 64).status_code == 303


def test_a_refused_code_is_sent_back_to_correct(program, pat):
    response = create(pat, program.pk, "pat summer")
    text = response.content.decode()
    assert 'value="pat summer"' in text and 'aria-invalid="true"' in text


def test_a_code_taken_by_anyone_is_refused(program, pat):
    sam = joined(program, email="sam@example.com")
    assert create(sam, program.pk, "best-code").status_code == 303
    _refused(pat, program.pk, "best-code", "That code is taken")
    # Another workspace's link, and the partner's own.
    ReferralLinkFactory(short_link="far-code")
    _refused(pat, program.pk, "far-code", "That code is taken")
    assert create(pat, program.pk, "mine").status_code == 303
    _refused(pat, program.pk, "mine", "That code is taken")
    assert ReferralLink.objects.get(short_link="best-code").partner == partner_of(program, "sam@example.com")


def test_a_concurrent_duplicate_is_stopped_by_the_unique_constraint(program, pat, monkeypatch):
    """The code is free when the partner looks and taken when the row is written: the database refuses it."""
    from programs import services

    create_link = services.ReferralLink.objects.create
    other = PartnerProgramFactory()

    def raced(**fields):
        # Another partner's link with the same code is written just before this INSERT.
        create_link(short_link=fields["short_link"], program=other.program, partner=other.partner)
        return create_link(**fields)

    monkeypatch.setattr(services.ReferralLink.objects, "create", raced)
    response = create(pat, program.pk, "raced")
    assert response.status_code == 400 and "That code is taken" in response.content.decode()
    # (The other row was written inside the refused INSERT's savepoint here, so it went with it.)
    assert not ReferralLink.objects.filter(partner__account__email="pat@example.com").exists()


def test_a_deactivated_partner_cannot_make_a_link(program, pat):
    from programs.services import partner_deactivate

    partner_deactivate(partner_id=partner_of(program).pk)
    response = create(pat, program.pk, "pat-paused")
    assert response.status_code == 403 and portal_links.PARTNER_INACTIVE in response.content.decode()
    assert not ReferralLink.objects.filter(short_link="pat-paused").exists()


def test_a_program_not_allowing_own_codes_is_refused(program, pat):
    program.partner_codes_allowed = False
    program.save()
    _refused(pat, program.pk, "pat-code", portal_links.PROGRAM_REFUSED)


def test_programs_not_enrolled_in_or_of_another_workspace_are_refused_as_unknown(program, pat):
    same_workspace = ProgramFactory(workspace=program.workspace, partner_codes_allowed=True)
    elsewhere = ProgramFactory(partner_codes_allowed=True)
    PartnerProgramFactory(program=elsewhere)  # someone else's enrolment there
    answers = set()
    for program_id in (same_workspace.pk, elsewhere.pk, 10**9):
        response = create(pat, program_id, "pat-code")
        assert response.status_code == 400
        # The same page whatever the id named (the CSRF token aside): nothing tells the ids apart.
        answers.add(re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode()))
    assert len(answers) == 1 and portal_links.PROGRAM_REFUSED in answers.pop()
    assert not ReferralLink.objects.exists()


@pytest.mark.parametrize("program_id", ["", "abc", "-1", "0", "1.5", "9" * 30, "9" * 5000, "\x00", "١"])
def test_a_malformed_program_id_is_refused(program, pat, program_id):
    _refused(pat, program_id, "pat-code", portal_links.PROGRAM_REFUSED)


def test_a_form_without_a_program_or_a_code_is_refused(program, pat):
    assert pat.post("/portal/links", {}).status_code == 400
    assert pat.post("/portal/links", {"program": program.pk}).status_code == 400
    assert pat.post("/portal/links", {"program": [program.pk, 10**9], "code": ["a", "pat-x"]}).status_code == 400
    assert not ReferralLink.objects.exists()


# --- Access -----------------------------------------------------------------------------------------------------


def test_the_form_needs_its_csrf_token(program, pat):
    browser = Client(enforce_csrf_checks=True)
    browser.cookies = pat.cookies
    assert browser.get("/portal/links").status_code == 200
    assert browser.post("/portal/links", {"program": program.pk, "code": "pat-code"}).status_code == 403
    assert not ReferralLink.objects.exists()


def test_signed_out_visitors_go_to_the_sign_in_page(program):
    response = Client().get("/portal/links")
    assert response.status_code == 302 and response["Location"] == "/portal/sign-in?next=%2Fportal%2Flinks"
    posted = Client().post("/portal/links", {"program": program.pk, "code": "pat-code"})
    assert posted.status_code == 302 and posted["Location"].startswith("/portal/sign-in")
    assert not ReferralLink.objects.exists()


def test_an_owners_dashboard_session_is_signed_out_here(program):
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    for response in (owner.get("/portal/links"), owner.post("/portal/links", {"program": program.pk, "code": "o-1"})):
        assert response.status_code == 302 and response["Location"].startswith("/portal/sign-in")
    assert not ReferralLink.objects.exists()


def test_other_methods_are_refused(pat):
    assert pat.put("/portal/links").status_code == 405
    assert pat.delete("/portal/links").status_code == 405
    assert pat.head("/portal/links").status_code == 200


def test_creations_are_rate_limited_per_account(program, pat):
    answers = [create(pat, program.pk, f"pat-{n}").status_code for n in range(20)]
    assert answers == [303] * 20
    refused = create(pat, program.pk, "pat-20")
    assert refused.status_code == 429 and portal_links.TOO_MANY in refused.content.decode()
    assert not ReferralLink.objects.filter(short_link="pat-20").exists()
    # Another account has its own allowance.
    sam = joined(program, email="sam@example.com")
    assert create(sam, program.pk, "sam-1").status_code == 303
