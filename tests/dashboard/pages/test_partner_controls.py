"""What owners control on the Partners page: deactivating and reactivating a partner (their links answer 410, their
commissions stay as they are), making links for them, turning links off and on, and notes the partner never sees.
Every action is tried as a member, signed out, without CSRF, with another workspace's ids and with bad ids."""

import re

import pytest
from django.contrib.messages import get_messages
from django.core import mail
from django.test import Client
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.models import Commission, LedgerEntry
from dashboard import partner_views
from portal.session import COOKIE_PATH
from programs.models import Partner, PartnerAccount, ReferralLink
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    PartnerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
)

pytestmark = pytest.mark.django_db

CLICK_URL = "/api/v1/track/click"
PASSWORD = "long enough passphrase 1"
INVITATION_LINK = re.compile(r"/portal/invitations/[A-Za-z0-9_-]+")


@pytest.fixture
def link(program):
    return ReferralLinkFactory(
        program=program,
        short_link="pat-summer",
        partner=PartnerFactory(workspace=program.workspace, name="Pat", email="pat@example.com"),
    )


@pytest.fixture
def partner(link) -> Partner:
    assert link.partner is not None
    return link.partner


def base(program) -> str:
    return f"/programs/{program.pk}"


def partner_url(program, partner_id, action: str) -> str:
    return f"{base(program)}/partners/{partner_id}/{action}"


def link_url(program, link_id, action: str) -> str:
    return f"{base(program)}/links/{link_id}/{action}"


def flashed(response) -> list[str]:
    """The message this response flashed (those of earlier requests wait unread in the session before it)."""
    return [str(message) for message in get_messages(response.wsgi_request)][-1:]


def click(api_client, program, code: str):
    return api_client.post(CLICK_URL, {"affiliate_url": f"https://{program.domain}/?aff={code}"}, format="json")


def page(client: Client, program) -> str:
    response = client.get(f"{base(program)}/partners")
    assert response.status_code == 200
    return response.content.decode()


# --- Deactivating and reactivating a partner ------------------------------------------------------------------


def test_deactivating_turns_off_every_link_of_the_partner_in_the_workspace(owner_client, program, partner, link):
    sister = ProgramFactory(workspace=program.workspace)
    elsewhere = ReferralLinkFactory(program=sister, partner=partner, short_link="pat-sister")
    other = ReferralLinkFactory(program=program, short_link="someone-else")

    response = owner_client.post(partner_url(program, partner.pk, "deactivate"))

    assert response.status_code == 302
    assert response["Location"] == f"{base(program)}/partners#partner-{partner.pk}"
    assert flashed(response) == [partner_views.DEACTIVATED.format(name="Pat", links=2)]
    partner.refresh_from_db()
    assert not partner.is_active
    assert not ReferralLink.objects.get(pk=link.pk).is_active
    assert not ReferralLink.objects.get(pk=elsewhere.pk).is_active
    assert ReferralLink.objects.get(pk=other.pk).is_active  # another partner's link is left alone


def test_a_click_on_a_deactivated_partners_link_answers_410(owner_client, api_client, program, partner, link):
    assert click(api_client, program, "pat-summer").status_code == 200  # the link is now in this process's cache

    assert owner_client.post(partner_url(program, partner.pk, "deactivate")).status_code == 302

    refused = click(api_client, program, "pat-summer")
    assert (refused.status_code, refused.json()["error"]["code"]) == (410, "link_disabled")


def test_unpaid_commissions_and_the_ledger_stay_as_they_are(owner_client, program, partner, link):
    customer = CustomerFactory(link=link)
    pending = CommissionFactory(sale=SaleFactory(customer=customer), status="pending")
    approved = CommissionFactory(sale=SaleFactory(customer=customer), hold_until=timezone.now())
    assert commission_approve(commission_id=approved.pk)

    def state():
        commissions = list(
            Commission.objects.filter(partner=partner).order_by("pk").values_list("pk", "status", "amount_cents")
        )
        ledger = list(LedgerEntry.objects.filter(partner=partner).order_by("pk").values())
        return commissions, ledger

    before = state()
    assert {row[1] for row in before[0]} == {"pending", "approved"} and before[1]

    assert owner_client.post(partner_url(program, partner.pk, "deactivate")).status_code == 302
    assert state() == before
    assert owner_client.post(partner_url(program, partner.pk, "reactivate")).status_code == 302
    assert state() == before
    assert Commission.objects.get(pk=pending.pk).status == "pending"


def test_deactivating_twice_changes_nothing_the_second_time(owner_client, program, partner, link):
    owner_client.post(partner_url(program, partner.pk, "deactivate"))
    response = owner_client.post(partner_url(program, partner.pk, "deactivate"))
    assert flashed(response) == [partner_views.ALREADY_INACTIVE.format(name="Pat")]


def test_reactivating_leaves_the_links_off_for_the_owner_to_turn_on(owner_client, api_client, program, partner, link):
    paused = ReferralLinkFactory(program=program, partner=partner, short_link="pat-paused", is_active=False)
    owner_client.post(partner_url(program, partner.pk, "deactivate"))

    response = owner_client.post(partner_url(program, partner.pk, "reactivate"))

    assert flashed(response) == [partner_views.REACTIVATED.format(name="Pat")]
    partner.refresh_from_db()
    assert partner.is_active
    # The links stay off, both the one the deactivation turned off and the one the owner had turned off before.
    assert not ReferralLink.objects.filter(pk__in=[link.pk, paused.pk], is_active=True).exists()
    assert click(api_client, program, "pat-summer").status_code == 410
    # The owner turns on the one they want; it takes clicks at once.
    assert owner_client.post(link_url(program, link.pk, "activate")).status_code == 302
    assert click(api_client, program, "pat-summer").status_code == 200
    assert not ReferralLink.objects.get(pk=paused.pk).is_active

    again = owner_client.post(partner_url(program, partner.pk, "reactivate"))
    assert flashed(again) == [partner_views.ALREADY_ACTIVE.format(name="Pat")]


def test_a_deactivated_partners_link_cannot_be_turned_on_nor_made(owner_client, program, partner, link):
    owner_client.post(partner_url(program, partner.pk, "deactivate"))

    response = owner_client.post(link_url(program, link.pk, "activate"))
    assert flashed(response) == [partner_views.PARTNER_INACTIVE.format(name="Pat")]
    assert not ReferralLink.objects.get(pk=link.pk).is_active

    response = owner_client.post(partner_url(program, partner.pk, "links"), {"code": "pat-new"})
    assert flashed(response) == [partner_views.PARTNER_INACTIVE.format(name="Pat")]
    assert not ReferralLink.objects.filter(short_link="pat-new").exists()


def test_the_page_shows_the_partners_state_and_the_owners_buttons(owner_client, program, partner, link):
    text = page(owner_client, program)
    assert "active partner" in text and f'action="{partner_url(program, partner.pk, "deactivate")}"' in text
    assert f'action="{link_url(program, link.pk, "deactivate")}"' in text
    assert f'action="{partner_url(program, partner.pk, "links")}"' in text

    owner_client.post(partner_url(program, partner.pk, "deactivate"))
    text = page(owner_client, program)
    assert "deactivated" in text and f'action="{partner_url(program, partner.pk, "reactivate")}"' in text
    assert f'action="{partner_url(program, partner.pk, "deactivate")}"' not in text
    # No "Turn on" for a deactivated partner's link, nor a new link form.
    assert f'action="{link_url(program, link.pk, "activate")}"' not in text
    assert f'action="{partner_url(program, partner.pk, "links")}"' not in text


# --- Links ----------------------------------------------------------------------------------------------------


def test_an_owner_makes_a_link_for_a_partner(owner_client, api_client, program, partner):
    response = owner_client.post(partner_url(program, partner.pk, "links"), {"code": " pat-winter "})

    made = ReferralLink.objects.get(short_link="pat-winter")
    assert (made.partner, made.program, made.is_active) == (partner, program, True)
    assert flashed(response) == [partner_views.LINK_CREATED.format(code="pat-winter", name="Pat")]
    assert response["Location"].endswith(f"#partner-{partner.pk}")
    assert click(api_client, program, "pat-winter").status_code == 200


def test_without_a_code_one_is_generated(owner_client, program, partner):
    owner_client.post(partner_url(program, partner.pk, "links"), {"code": ""})
    assert ReferralLink.objects.filter(partner=partner, program=program, short_link__startswith="pat-").count() == 2


@pytest.mark.parametrize("code", ["has space", "ünï", "a/b", "x" * 101, "nul\x00"])
def test_a_malformed_code_is_refused_with_a_message(owner_client, program, partner, code):
    response = owner_client.post(partner_url(program, partner.pk, "links"), {"code": code})
    assert response.status_code == 302 and flashed(response)
    assert ReferralLink.objects.filter(partner=partner).count() == 1


def test_a_taken_code_is_refused(owner_client, program, partner):
    ReferralLinkFactory(short_link="taken-code")  # another workspace's link
    response = owner_client.post(partner_url(program, partner.pk, "links"), {"code": "taken-code"})
    assert flashed(response) == [partner_views.CODE_TAKEN.format(code="taken-code")]
    assert ReferralLink.objects.filter(partner=partner).count() == 1


def test_turning_a_link_off_and_on(owner_client, api_client, program, link):
    assert click(api_client, program, "pat-summer").status_code == 200

    response = owner_client.post(link_url(program, link.pk, "deactivate"))
    assert flashed(response) == [partner_views.LINK_OFF.format(code="pat-summer")]
    assert click(api_client, program, "pat-summer").status_code == 410
    again = owner_client.post(link_url(program, link.pk, "deactivate"))
    assert flashed(again) == [partner_views.LINK_ALREADY_OFF.format(code="pat-summer")]

    response = owner_client.post(link_url(program, link.pk, "activate"))
    assert flashed(response) == [partner_views.LINK_ON.format(code="pat-summer")]
    assert click(api_client, program, "pat-summer").status_code == 200
    again = owner_client.post(link_url(program, link.pk, "activate"))
    assert flashed(again) == [partner_views.LINK_ALREADY_ON.format(code="pat-summer")]


def test_an_admin_may_act_too(admin_role_client, program, link):
    assert admin_role_client.post(link_url(program, link.pk, "deactivate")).status_code == 302
    assert not ReferralLink.objects.get(pk=link.pk).is_active


# --- Notes ----------------------------------------------------------------------------------------------------


def test_notes_are_saved_and_shown_to_the_workspace(owner_client, member_client, program, partner):
    response = owner_client.post(partner_url(program, partner.pk, "notes"), {"notes": "Pays <late>\nsecond line"})
    assert flashed(response) == [partner_views.NOTES_SAVED.format(name="Pat")]
    partner.refresh_from_db()
    assert partner.notes == "Pays <late>\nsecond line"
    assert "Pays &lt;late&gt;" in page(owner_client, program)  # in the textarea, escaped
    assert "Pays &lt;late&gt;<br>second line" in page(member_client, program)  # read only for members


@pytest.mark.parametrize("notes", ["x" * 5001, "bad \x00 byte"])
def test_bad_notes_are_refused(owner_client, program, partner, notes):
    response = owner_client.post(partner_url(program, partner.pk, "notes"), {"notes": notes})
    assert response.status_code == 302 and flashed(response)
    partner.refresh_from_db()
    assert partner.notes == ""


def test_notes_of_5000_characters_are_accepted_and_empty_notes_clear_them(owner_client, program, partner):
    owner_client.post(partner_url(program, partner.pk, "notes"), {"notes": "x" * 5000})
    assert Partner.objects.get(pk=partner.pk).notes == "x" * 5000
    owner_client.post(partner_url(program, partner.pk, "notes"), {"notes": ""})
    assert Partner.objects.get(pk=partner.pk).notes == ""


def _joined_partner(program, email: str) -> Client:
    """A browser of the partner `email`, who followed an owner's invitation to `program` (as in tests/portal)."""
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    mail.outbox.clear()
    assert owner.post(f"{base(program)}/partners/invite", {"name": "Pat", "email": email}).status_code == 302
    found = INVITATION_LINK.search(str(mail.outbox[0].body))
    assert found is not None
    browser = Client()
    response = browser.post(found.group(0), {"password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == COOKIE_PATH
    return browser


def test_notes_are_never_shown_to_the_partner_and_a_deactivated_partner_still_signs_in(
    owner_client, program, partner, link
):
    pat = _joined_partner(program, "pat@example.com")
    assert PartnerAccount.objects.get(email="pat@example.com").partners.get() == partner
    CommissionFactory(sale=SaleFactory(customer=CustomerFactory(link=link)), status="pending")
    owner_client.post(partner_url(program, partner.pk, "notes"), {"notes": "SECRET-OWNER-NOTE"})
    owner_client.post(partner_url(program, partner.pk, "deactivate"))

    for path in ("/portal/", "/portal/links", "/portal/performance", "/portal/commissions", "/portal/balance"):
        response = pat.get(path)
        assert response.status_code == 200, path
        assert "SECRET-OWNER-NOTE" not in response.content.decode(), path
    assert "pat-summer" in pat.get("/portal/links").content.decode()  # their history is still theirs


# --- Who may act, and on what ---------------------------------------------------------------------------------


def _actions(program, partner, link) -> list[tuple[str, dict[str, str]]]:
    return [
        (partner_url(program, partner.pk, "deactivate"), {}),
        (partner_url(program, partner.pk, "reactivate"), {}),
        (partner_url(program, partner.pk, "links"), {"code": "intruder"}),
        (partner_url(program, partner.pk, "notes"), {"notes": "intruder"}),
        (link_url(program, link.pk, "deactivate"), {}),
        (link_url(program, link.pk, "activate"), {}),
    ]


def _untouched(partner, link) -> None:
    partner.refresh_from_db()
    assert partner.is_active and partner.notes == ""
    assert ReferralLink.objects.get(pk=link.pk).is_active
    assert not ReferralLink.objects.filter(short_link="intruder").exists()


def test_members_see_the_state_without_buttons_and_get_403(member_client, program, partner, link):
    text = page(member_client, program)
    assert "active partner" in text
    assert "/deactivate" not in text and "/activate" not in text and "/notes" not in text and "/links" not in text
    for url, data in _actions(program, partner, link):
        assert member_client.post(url, data).status_code == 403, url
    _untouched(partner, link)


def test_signed_out_visitors_go_to_sign_in(program, partner, link):
    for url, data in _actions(program, partner, link):
        response = Client().post(url, data)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), url
    _untouched(partner, link)


def test_the_csrf_token_is_required(owner, program, partner, link):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    for url, data in _actions(program, partner, link):
        assert browser.post(url, data).status_code == 403, url
    _untouched(partner, link)


def test_get_is_refused(owner_client, program, partner, link):
    for url, _data in _actions(program, partner, link):
        assert owner_client.get(url).status_code == 405, url


def test_an_owner_of_another_workspace_cannot_act(outsider_client, program, partner, link):
    for url, data in _actions(program, partner, link):
        assert outsider_client.post(url, data).status_code in (403, 404), url
    _untouched(partner, link)


def test_another_workspaces_partner_or_link_in_the_path_answers_404(owner_client, program):
    foreign = ReferralLinkFactory(short_link="foreign")  # a partner and link of another workspace's program
    assert foreign.partner is not None
    for url, data in _actions(program, foreign.partner, foreign):
        assert owner_client.post(url, data).status_code == 404, url
    _untouched(foreign.partner, foreign)


def test_a_partner_not_enrolled_or_a_link_of_another_program_answers_404(owner_client, program):
    unenrolled = PartnerFactory(workspace=program.workspace)
    sister_link = ReferralLinkFactory(program=ProgramFactory(workspace=program.workspace), short_link="sister")
    assert sister_link.partner is not None
    for url, data in (
        _actions(program, unenrolled, sister_link)[:4] + _actions(program, sister_link.partner, sister_link)[4:]
    ):
        assert owner_client.post(url, data).status_code == 404, url
    _untouched(unenrolled, sister_link)
    assert sister_link.partner.is_active


def test_a_partner_enrolled_in_another_program_of_the_workspace_may_be_acted_on_only_through_it(
    owner_client, program, partner
):
    other = PartnerProgramFactory(program=ProgramFactory(workspace=program.workspace))
    assert owner_client.post(partner_url(program, other.partner.pk, "deactivate")).status_code == 404
    assert Partner.objects.get(pk=other.partner.pk).is_active


@pytest.mark.parametrize("bad", ["0", "99999999999999999999", "9223372036854775808", "x", "-1", "%00"])
def test_bad_ids_never_500(owner_client, program, bad):
    for url in (
        partner_url(program, bad, "deactivate"),
        partner_url(program, bad, "notes"),
        link_url(program, bad, "activate"),
        f"/programs/{bad}/partners/1/deactivate",
    ):
        assert owner_client.post(url).status_code == 404, url
