# ruff: noqa: F811  (fixtures imported from tests.dashboard.groups_support)
"""The Groups tab over HTTP: listing a program's groups with their terms in plain words, making, changing and
deleting a group, and a group's tier rules and bonuses; each write with its audit entry."""

from decimal import Decimal
from html import unescape

import pytest

from groups.models import Bonus, CouponCode, PartnerGroup, TierRule
from groups.rules import bonus_create, tier_rule_create
from groups.services import group_create
from programs.models import PartnerProgram
from tests.dashboard.groups_support import (  # noqa: F401  (fixtures)
    admin_client,
    audit_entries,
    base,
    default,
    enrolment,
    flashed,
    group_post,
    member_client,
    owner,
    owner_client,
    partner,
    program,
    vip,
)
from tests.factories import PartnerProgramFactory, ProgramFactory

pytestmark = pytest.mark.django_db


# --- The list ----------------------------------------------------------------------------------------------------


def test_the_list_shows_the_default_group_first_with_counts_and_terms(member_client, program, default, vip, enrolment):
    group_create(program=program, name="Alpha influencers", commission_type="fixed", commission_rate=5000)
    PartnerProgram.objects.filter(pk=enrolment.pk).update(group=vip)
    PartnerProgramFactory(program=program)  # in the default group (group NULL)

    response = member_client.get(f"{base(program)}/groups")

    assert response.status_code == 200
    page = response.content.decode()
    # The default first, then by name.
    assert page.index(f'id="group-{default.pk}"') < page.index("Alpha influencers") < page.index(f'id="group-{vip.pk}"')
    default_row = page[page.index(f'id="group-{default.pk}"') : page.index("Alpha influencers")]
    assert "20% of every sale except renewals; held 30 days" in default_row
    assert '<td class="num" data-label="Partners">1</td>' in default_row
    vip_row = page[page.index(f'id="group-{vip.pk}"') :]
    assert "30% of every sale except renewals" in vip_row and "10% off the first payment" in vip_row
    assert '<td class="num" data-label="Partners">1</td>' in vip_row
    assert "5000 (smallest currency unit) on every sale except renewals" in page
    assert 'aria-current="page">Groups</a>' in page
    # A member reads but is offered no write.
    assert "New group" not in page


def test_the_tab_is_on_every_program_page(member_client, program):
    page = member_client.get(f"{base(program)}/partners").content.decode()
    assert f'href="/programs/{program.pk}/groups"' in page


# --- Making a group ----------------------------------------------------------------------------------------------


def test_an_owner_makes_a_group_with_a_discount(owner_client, program):
    form = owner_client.get(f"{base(program)}/groups/new")
    assert form.status_code == 200 and 'name="commission_rate"' in form.content.decode()

    response = owner_client.post(
        f"{base(program)}/groups/new",
        group_post(
            name="Top partners",
            commission_type="recurring_percent",
            commission_rate="30",
            duration_months="12",
            hold_days="14",
            discount_type="percent",
            discount_percent="10",
            discount_duration="repeating",
            discount_duration_months="3",
            applications_open="on",
            application_questions="Your audience size *\nYour channel",
        ),
    )

    group = PartnerGroup.objects.get(program=program, name="Top partners")
    assert response.status_code == 302 and response["Location"] == f"{base(program)}/groups/{group.pk}"
    assert (group.commission_type, group.commission_rate, group.duration_months, group.hold_days) == (
        "recurring_percent",
        Decimal("30"),
        12,
        14,
    )
    assert (group.discount_type, group.discount_percent, group.discount_duration, group.discount_duration_months) == (
        "percent",
        Decimal("10"),
        "repeating",
        3,
    )
    assert group.discount_amount_cents is None and group.applications_open and group.slug == "top-partners"
    assert group.application_questions == [
        {"label": "Your audience size", "required": True},
        {"label": "Your channel", "required": False},
    ]
    page = owner_client.get(response["Location"]).content.decode()
    assert "30% of every sale, renewals included, for 12 months" in page
    assert "10% off every payment for the first 3 months" in page
    assert f"/join/{program.pk}/top-partners" in page

    (entry,) = audit_entries("group.create")
    assert entry.key is None and entry.key_masked == "user:olivia" and entry.object_type == "group"
    assert entry.object_id == str(group.pk) and entry.workspace_id == program.workspace_id
    assert entry.before is None and entry.after["name"] == "Top partners" and entry.after["commission_rate"] == "30"


def test_an_amount_discount_is_typed_in_major_units(admin_client, program):
    response = admin_client.post(
        f"{base(program)}/groups/new",
        group_post(name="Fixed", discount_type="amount", discount_amount="12.50", discount_currency="EUR"),
    )
    assert response.status_code == 302
    group = PartnerGroup.objects.get(program=program, name="Fixed")
    assert (group.discount_amount_cents, group.discount_currency, group.discount_percent) == (1250, "EUR", None)
    page = admin_client.get(response["Location"]).content.decode()
    assert "12.50 EUR off the first payment" in page


# --- Changing a group --------------------------------------------------------------------------------------------


def test_an_owner_changes_a_group_and_the_trail_has_before_and_after(owner_client, program, vip):
    form = owner_client.get(f"{base(program)}/groups/{vip.pk}/edit").content.decode()
    assert 'value="VIP"' in form and 'name="commission_rate" value="30"' in form
    assert 'name="discount_percent" value="10"' in form

    response = owner_client.post(
        f"{base(program)}/groups/{vip.pk}/edit",
        group_post(
            name="VIP", commission_rate="35", discount_type="amount", discount_amount="5", discount_duration="forever"
        ),
    )

    assert response.status_code == 302
    vip.refresh_from_db()
    assert vip.commission_rate == Decimal("35") and vip.discount_amount_cents == 500 and vip.discount_percent is None
    (entry,) = audit_entries("group.update")
    assert entry.before["commission_rate"] == "30.0000" and entry.after["commission_rate"] == "35"
    assert entry.before["discount_type"] == "percent" and entry.after["discount_type"] == "amount"


def test_the_default_group_shows_the_programs_terms_and_where_they_are_changed(owner_client, program, default):
    page = owner_client.get(f"{base(program)}/groups/{default.pk}/edit").content.decode()

    assert 'id="default-terms"' in page and "20% of every sale except renewals; held 30 days" in page
    assert f"PATCH /api/v1/programs/{program.pk}/settings" in page
    assert 'name="commission_rate"' not in page

    # A rate posted anyway is not the form's: the default group's terms are not changed here.
    response = owner_client.post(
        f"{base(program)}/groups/{default.pk}/edit",
        group_post(name="Everyone", commission_rate="90", discount_type="percent", discount_percent="5"),
    )
    assert response.status_code == 302
    default.refresh_from_db()
    program.refresh_from_db()
    assert default.name == "Everyone" and default.discount_percent == Decimal("5")
    assert program.commission_rate == Decimal("20") and default.commission_rate == Decimal("20")


def test_a_staff_user_gets_a_link_to_the_programs_admin_page(owner, owner_client, program, default):
    owner.is_staff = True
    owner.save()
    page = owner_client.get(f"{base(program)}/groups/{default.pk}/edit").content.decode()
    assert f'href="/admin/programs/program/{program.pk}/change/"' in page


# --- Deleting a group --------------------------------------------------------------------------------------------


def test_an_empty_group_is_deleted_after_confirming(owner_client, program, vip):
    confirm = owner_client.get(f"{base(program)}/groups/{vip.pk}/delete")
    assert confirm.status_code == 200 and 'id="confirm-delete"' in confirm.content.decode()

    response = owner_client.post(f"{base(program)}/groups/{vip.pk}/delete")

    assert response.status_code == 302 and response["Location"] == f"{base(program)}/groups"
    assert not PartnerGroup.objects.filter(pk=vip.pk).exists()
    (entry,) = audit_entries("group.delete")
    assert entry.before["name"] == "VIP" and entry.after is None and entry.object_id == str(vip.pk)


def test_a_group_with_partners_is_not_deleted(owner_client, program, vip, enrolment):
    PartnerProgram.objects.filter(pk=enrolment.pk).update(group=vip)

    assert "move them to another group" in owner_client.get(f"{base(program)}/groups/{vip.pk}/delete").content.decode()
    response = owner_client.post(f"{base(program)}/groups/{vip.pk}/delete")

    assert response.status_code == 400
    assert "Move this group's 1 partners to another group before deleting it" in unescape(response.content.decode())
    assert PartnerGroup.objects.filter(pk=vip.pk).exists() and not audit_entries("group.delete")


def test_the_default_group_is_not_deleted(owner_client, program, default):
    response = owner_client.post(f"{base(program)}/groups/{default.pk}/delete")
    assert response.status_code == 400 and "The default group cannot be deleted" in response.content.decode()
    assert PartnerGroup.objects.filter(pk=default.pk).exists()


# --- Tier rules and bonuses --------------------------------------------------------------------------------------


def test_a_tier_rule_is_added_and_removed(owner_client, program, default, vip):
    response = owner_client.post(
        f"{base(program)}/groups/{default.pk}/tier-rules",
        {"direction": "promote", "metric": "revenue", "period": "quarter", "threshold": "1000.50", "target": vip.pk},
    )

    assert response.status_code == 302 and response["Location"].endswith("#tier-rules")
    rule = TierRule.objects.get(group=default)
    assert (rule.target_id, rule.metric, rule.period, rule.threshold) == (vip.pk, "revenue", "quarter", 100050)
    page = owner_client.get(f"{base(program)}/groups/{default.pk}").content.decode()
    assert "Moved to VIP on reaching 1,000.50 revenue in a calendar quarter" in page
    (made,) = audit_entries("tier_rule.create")
    assert made.object_type == "tier_rule" and made.after["threshold"] == 100050 and made.after["target_id"] == vip.pk

    removed = owner_client.post(f"{base(program)}/groups/{default.pk}/tier-rules/{rule.pk}/delete")

    assert removed.status_code == 302 and not TierRule.objects.exists()
    (entry,) = audit_entries("tier_rule.delete")
    assert entry.before["id"] == rule.pk and entry.after is None


def test_a_bonus_is_added_and_removed(owner_client, program, vip):
    response = owner_client.post(
        f"{base(program)}/groups/{vip.pk}/bonuses",
        {
            "name": "First ten",
            "metric": "sales",
            "period": "lifetime",
            "threshold": "10",
            "amount": "50",
            "currency": "USD",
        },
    )

    assert response.status_code == 302 and response["Location"].endswith("#bonuses")
    bonus = Bonus.objects.get(group=vip)
    assert (bonus.name, bonus.threshold, bonus.amount_cents, bonus.currency) == ("First ten", 10, 5000, "USD")
    page = owner_client.get(f"{base(program)}/groups/{vip.pk}").content.decode()
    assert "50.00 USD on reaching 10 sales ever" in page
    assert audit_entries("bonus.create")[0].after["amount_cents"] == 5000

    assert owner_client.post(f"{base(program)}/groups/{vip.pk}/bonuses/{bonus.pk}/delete").status_code == 302
    assert not Bonus.objects.exists() and audit_entries("bonus.delete")[0].before["name"] == "First ten"


def test_a_rule_needs_another_group_to_move_to(owner_client, program, default):
    page = owner_client.get(f"{base(program)}/groups/{default.pk}").content.decode()
    assert "Make another group first" in page and 'id="rule-form"' not in page


def test_a_groups_page_lists_its_partners(member_client, program, default, vip, enrolment):
    in_default = PartnerProgramFactory(program=program)
    PartnerProgram.objects.filter(pk=enrolment.pk).update(group=vip)
    other = ProgramFactory()
    PartnerProgramFactory(program=other, group=group_create(program=other, name="VIP"))  # another program's

    vip_page = member_client.get(f"{base(program)}/groups/{vip.pk}").content.decode()
    members = vip_page[vip_page.index('id="members"') : vip_page.index('id="tier-rules"')]
    assert f"/partners/{enrolment.partner_id}/group" in members and members.count("<li>") == 1
    default_page = member_client.get(f"{base(program)}/groups/{default.pk}").content.decode()
    members = default_page[default_page.index('id="members"') : default_page.index('id="tier-rules"')]
    assert f"/partners/{in_default.partner_id}/group" in members and members.count("<li>") == 1


def test_the_pages_cost_the_same_queries_however_many_groups_and_codes(
    member_client, program, default, vip, enrolment, django_assert_max_num_queries
):
    def fill(n: int) -> None:
        for i in range(n):
            group = group_create(program=program, name=f"Group {len(PartnerGroup.objects.all())}-{i}")
            PartnerProgramFactory(program=program, group=group)
            tier_rule_create(group=group, target=vip, metric="sales", threshold=5)
            bonus_create(group=group, name="Ten", metric="sales", threshold=10, amount_cents=100)
            CouponCode.objects.create(program=program, partner=enrolment.partner, code=f"CODE{i}-{group.pk}")

    fill(1)
    # The list: session, user, program, membership x2, the default group, the groups, partner, rule and bonus counts.
    # The partner's page: session, user, program, membership x2, the enrolment, the default group, codes, changes,
    # the default group and the groups (for the move form).
    with django_assert_max_num_queries(10):
        member_client.get(f"{base(program)}/groups")
    with django_assert_max_num_queries(11):
        member_client.get(f"{base(program)}/partners/{enrolment.partner_id}/group")
    fill(5)
    with django_assert_max_num_queries(10):
        member_client.get(f"{base(program)}/groups")
    with django_assert_max_num_queries(11):
        member_client.get(f"{base(program)}/partners/{enrolment.partner_id}/group")
