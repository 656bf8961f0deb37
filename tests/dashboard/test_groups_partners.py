# ruff: noqa: F811  (fixtures imported from tests.dashboard.groups_support)
"""A partner's group and coupon codes on the dashboard: moving a partner (a GroupChange naming the owner, the
partner.group_changed event, the audit entry), adding codes through groups.stripe_codes and deactivating them."""

from html import unescape

import pytest

from core.errors import ApiError
from dashboard import group_views
from groups.models import CouponCode, GroupChange
from groups.stripe_codes import StripeUnavailableError
from programs.models import PartnerProgram
from tests.dashboard.groups_support import (  # noqa: F401  (fixtures)
    audit_entries,
    base,
    default,
    enrolment,
    flashed,
    member_client,
    owner,
    owner_client,
    partner,
    program,
    vip,
)
from webhooks.models import EventType, WebhookEvent

pytestmark = pytest.mark.django_db


def partner_url(program, partner, tail: str = "group") -> str:
    return f"{base(program)}/partners/{partner.pk}/{tail}"


# --- Moving a partner --------------------------------------------------------------------------------------------


def test_the_partners_page_shows_the_group_and_codes_and_moves_the_partner(owner_client, program, vip, partner):
    CouponCode.objects.create(program=program, partner=partner, code="JANE20")
    page = owner_client.get(f"{base(program)}/partners").content.decode()
    card = page[page.index(f'id="partner-group-{partner.pk}"') :]
    assert ">Default</a>" in card and "<code>JANE20</code>" in card
    assert f'<option value="{vip.pk}">VIP</option>' in card

    response = owner_client.post(partner_url(program, partner, "group/move"), {"group": vip.pk, "back": "partners"})

    assert response.status_code == 302
    assert response["Location"] == f"{base(program)}/partners#partner-{partner.pk}"
    assert PartnerProgram.objects.get(program=program, partner=partner).group_id == vip.pk
    assert flashed(response) == ["Jane moved to VIP: commissions earned from now on use its terms."]


def test_a_move_records_the_change_emits_the_event_and_is_audited(owner_client, program, default, vip, enrolment):
    response = owner_client.post(partner_url(program, enrolment.partner, "group/move"), {"group": vip.pk})

    assert response.status_code == 302 and response["Location"] == partner_url(program, enrolment.partner)
    (change,) = GroupChange.objects.all()
    assert (change.from_group_id, change.to_group_id, change.reason, change.actor) == (
        default.pk,
        vip.pk,
        "owner",
        "user:olivia",
    )
    (event,) = WebhookEvent.objects.filter(type=EventType.PARTNER_GROUP_CHANGED)
    assert event.program_id == program.pk
    (entry,) = audit_entries("enrolment.move")
    assert entry.key is None and entry.key_masked == "user:olivia" and entry.object_type == "enrolment"
    assert entry.object_id == str(enrolment.pk)
    assert entry.before["group_id"] == default.pk and entry.after["group_id"] == vip.pk
    assert entry.after["group_change_id"] == change.pk
    # The partner's page shows the new group and the change, with who made it.
    page = owner_client.get(partner_url(program, enrolment.partner)).content.decode()
    assert ">VIP</a>" in page[page.index('id="current-group"') :] and "Moved by an owner (user:olivia)" in page

    # Back to the default group: the enrolment's group is NULL again.
    owner_client.post(partner_url(program, enrolment.partner, "group/move"), {"group": default.pk})
    assert PartnerProgram.objects.get(pk=enrolment.pk).group_id is None
    assert GroupChange.objects.count() == 2 and len(audit_entries("enrolment.move")) == 2


def test_a_move_to_the_group_the_partner_is_in_changes_nothing(owner_client, program, default, partner):
    response = owner_client.post(partner_url(program, partner, "group/move"), {"group": default.pk})

    assert response.status_code == 302
    assert flashed(response) == ["Jane already is in Default: nothing changed."]
    assert not GroupChange.objects.exists() and not audit_entries("enrolment.move")
    assert not WebhookEvent.objects.filter(type=EventType.PARTNER_GROUP_CHANGED).exists()


@pytest.mark.parametrize("group", ["", "abc", "-1", "99999999999999999999999"])
def test_a_move_to_no_group_is_refused_on_the_form(owner_client, program, partner, group):
    response = owner_client.post(partner_url(program, partner, "group/move"), {"group": group})

    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="move-form"' in page and "data-error-summary" in page
    assert not GroupChange.objects.exists()


def test_a_member_sees_the_group_but_no_form(member_client, program, partner):
    page = member_client.get(partner_url(program, partner)).content.decode()
    assert 'id="current-group"' in page and 'id="move-form"' not in page and 'id="code-form"' not in page
    partners = member_client.get(f"{base(program)}/partners").content.decode()
    assert f'id="partner-group-{partner.pk}"' in partners and f'id="move-{partner.pk}"' not in partners


# --- Coupon codes ------------------------------------------------------------------------------------------------


def test_an_owner_adds_a_code_registered_as_it_is_without_stripe(owner_client, program, partner):
    response = owner_client.post(partner_url(program, partner, "codes"), {"code": " jane20 "})

    assert response.status_code == 302 and response["Location"] == partner_url(program, partner)
    code = CouponCode.objects.get(program=program)
    assert (code.code, code.partner_id, code.source, code.is_active) == ("JANE20", partner.pk, "manual", True)
    (entry,) = audit_entries("coupon_code.create")
    assert entry.object_type == "coupon_code" and entry.object_id == str(code.pk)
    assert entry.before is None and entry.after["code"] == "JANE20" and entry.key_masked == "user:olivia"
    page = owner_client.get(partner_url(program, partner)).content.decode()
    assert "<code>JANE20</code>" in page


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("JANE 20", "coupon_code must be 1 to 100 letters, digits, - or _"),
        ("jäne", "coupon_code must be 1 to 100 letters, digits, - or _"),
        ("", "This field is required."),
        ("X" * 101, "Ensure this value has at most 100 characters (it has 101)."),
    ],
)
def test_a_bad_code_is_refused_on_the_form(owner_client, program, partner, typed, message):
    response = owner_client.post(partner_url(program, partner, "codes"), {"code": typed})

    assert response.status_code == 400
    page = unescape(response.content.decode())
    assert message in page and 'id="code-form"' in page and 'aria-invalid="true"' in page
    assert not CouponCode.objects.exists() and not audit_entries("coupon_code.create")


def test_a_code_taken_in_the_program_is_refused_on_the_form(owner_client, program, partner):
    from tests.factories import PartnerProgramFactory

    other = PartnerProgramFactory(program=program).partner
    CouponCode.objects.create(program=program, partner=other, code="JANE20")

    response = owner_client.post(partner_url(program, partner, "codes"), {"code": "Jane20"})

    assert response.status_code == 400
    assert "The code JANE20 is already used in this program" in response.content.decode()
    assert CouponCode.objects.count() == 1


def test_with_stripe_connected_but_not_configured_the_code_is_refused_on_the_form(
    owner_client, program, partner, settings
):
    settings.STRIPE_SECRET_KEY = ""
    program.stripe_account_id = "acct_1Connected"
    program.save()

    response = owner_client.post(partner_url(program, partner, "codes"), {"code": "JANE20"})

    assert response.status_code == 400 and "Stripe is not configured on this installation" in response.content.decode()
    assert not CouponCode.objects.exists()


def test_with_stripe_a_group_with_no_discount_is_refused_on_the_form(owner_client, program, partner, settings):
    settings.STRIPE_SECRET_KEY = "sk_test_never_called"
    program.stripe_account_id = "acct_1Connected"
    program.save()

    response = owner_client.post(partner_url(program, partner, "codes"), {"code": "JANE20"})

    assert response.status_code == 400
    assert "gives no discount: a Stripe promotion code needs one" in unescape(response.content.decode())


def test_stripe_failing_is_a_message_on_the_form_not_a_server_error(owner_client, program, partner, monkeypatch):
    def unavailable(**_: object) -> CouponCode:
        raise StripeUnavailableError("Stripe could not be reached; nothing was made. Try again", code="x")

    monkeypatch.setattr(group_views, "partner_code_create", unavailable)

    response = owner_client.post(partner_url(program, partner, "codes"), {"code": "JANE20"})

    assert response.status_code == 400 and "Stripe could not be reached" in response.content.decode()
    assert issubclass(StripeUnavailableError, ApiError) and not audit_entries("coupon_code.create")


def test_a_code_is_deactivated_once(owner_client, program, partner):
    code = CouponCode.objects.create(program=program, partner=partner, code="JANE20")

    response = owner_client.post(f"{base(program)}/codes/{code.pk}/deactivate")

    assert response.status_code == 302 and response["Location"] == partner_url(program, partner)
    code.refresh_from_db()
    assert not code.is_active
    (entry,) = audit_entries("coupon_code.deactivate")
    assert entry.before["is_active"] is True and entry.after["is_active"] is False

    again = owner_client.post(f"{base(program)}/codes/{code.pk}/deactivate")
    assert again.status_code == 302 and flashed(again) == ["Code JANE20 already was deactivated."]
    assert len(audit_entries("coupon_code.deactivate")) == 1
