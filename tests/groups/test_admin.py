"""Groups in Django admin: groups made, changed and deleted through groups.services (the default group's terms are
the program's and not editable here), tier rules and bonuses inline, partners moved with partner_move, codes
deactivated through groups.codes, group changes and bonus awards read only; every write on the audit trail."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from agent_api.models import AgentAuditEntry
from groups.models import Bonus, BonusAward, CouponCode, GroupChange, PartnerGroup, TierRule
from groups.rules import bonus_create
from groups.selectors import default_group
from groups.services import group_create
from programs.models import PartnerProgram
from tests.factories import CommissionFactory, PartnerFactory, PartnerProgramFactory, ProgramFactory
from webhooks.models import EventType, WebhookEvent

pytestmark = pytest.mark.django_db

ADMIN = "/admin/groups"


@pytest.fixture
def operator_client(client):
    user = get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123")
    client.force_login(user)
    return client


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


@pytest.fixture
def vip(program):
    return group_create(program=program, name="VIP", commission_rate=30)


def inlines(**rows: list[dict[str, object]]) -> dict[str, object]:
    """The inline formsets' management data (tier_rules, bonuses) with the given new rows."""
    data: dict[str, object] = {}
    for prefix in ("tier_rules", "bonuses"):
        given = rows.get(prefix, [])
        data |= {f"{prefix}-TOTAL_FORMS": len(given), f"{prefix}-INITIAL_FORMS": 0}
        data |= {f"{prefix}-MIN_NUM_FORMS": 0, f"{prefix}-MAX_NUM_FORMS": 1000}
        for n, row in enumerate(given):
            data |= {f"{prefix}-{n}-{name}": value for name, value in row.items()}
    return data


def group_data(program, **fields) -> dict[str, object]:
    data = {
        "program": program.pk,
        "name": "Influencers",
        "commission_type": "fixed",
        "commission_rate": "5000",
        "duration_months": "0",
        "hold_days": "30",
        "discount_type": "",
        "discount_currency": "USD",
        "discount_duration": "once",
        "application_questions": "[]",
    }
    return {**data, **fields, **inlines()}


def test_an_operator_makes_a_group_through_the_service(operator_client, program):
    response = operator_client.post(f"{ADMIN}/partnergroup/add/", group_data(program))

    assert response.status_code == 302, response.content.decode()[:3000]
    group = PartnerGroup.objects.get(program=program, name="Influencers")
    assert group.slug == "influencers" and not group.is_default and group.commission_rate == Decimal("5000")
    (entry,) = AgentAuditEntry.objects.filter(action="group.create")
    assert entry.key_masked == "admin:operator" and entry.object_id == str(group.pk) and entry.key is None


@pytest.mark.parametrize(
    "fields",
    [
        {"commission_type": "percent", "commission_rate": "150"},
        {"commission_rate": "0"},
        {"name": "vip"},
        {"discount_type": "percent", "discount_percent": "150"},
        {"discount_type": "percent"},
        {"discount_duration": "repeating", "discount_type": "percent", "discount_percent": "10"},
    ],
)
def test_a_refused_group_is_shown_on_the_form(operator_client, program, vip, fields):
    response = operator_client.post(f"{ADMIN}/partnergroup/add/", group_data(program, **fields))

    assert response.status_code == 200 and "errornote" in response.content.decode()
    assert PartnerGroup.objects.filter(program=program).count() == 2  # the default and VIP
    assert not AgentAuditEntry.objects.exists()


def test_the_default_group_shows_the_programs_terms_not_its_own(operator_client, program):
    default = default_group(program)
    page = operator_client.get(f"{ADMIN}/partnergroup/{default.pk}/change/").content.decode()
    assert "The program&#x27;s settings" in page and 'name="commission_rate"' not in page

    data = {
        "name": "Everyone",
        "discount_type": "percent",
        "discount_percent": "5",
        "discount_currency": "USD",
        "discount_duration": "once",
        "application_questions": "[]",
        **inlines(),
    }
    response = operator_client.post(f"{ADMIN}/partnergroup/{default.pk}/change/", data)

    assert response.status_code == 302
    default.refresh_from_db()
    assert default.name == "Everyone" and default.discount_percent == Decimal("5") and default.is_default
    (entry,) = AgentAuditEntry.objects.filter(action="group.update")
    assert entry.before["name"] == "Default" and entry.after["name"] == "Everyone"


def test_the_default_group_and_a_group_with_partners_cannot_be_deleted(operator_client, program, vip):
    default = default_group(program)
    PartnerProgramFactory(program=program, group=vip)

    assert operator_client.get(f"{ADMIN}/partnergroup/{default.pk}/delete/").status_code == 403
    assert operator_client.post(f"{ADMIN}/partnergroup/{vip.pk}/delete/", {"post": "yes"}).status_code == 403
    assert PartnerGroup.objects.filter(program=program).count() == 2


def test_an_empty_group_is_deleted_through_the_service(operator_client, program, vip):
    response = operator_client.post(f"{ADMIN}/partnergroup/{vip.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302 and not PartnerGroup.objects.filter(pk=vip.pk).exists()
    assert AgentAuditEntry.objects.get(action="group.delete").before["name"] == "VIP"


def test_the_bulk_delete_goes_through_the_service_and_never_takes_the_default(operator_client, program, vip):
    default = default_group(program)
    empty = group_create(program=program, name="Empty")
    with_default = {"action": "delete_selected", "_selected_action": [default.pk, empty.pk], "post": "yes"}
    assert operator_client.post(f"{ADMIN}/partnergroup/", with_default).status_code == 403
    assert PartnerGroup.objects.filter(pk__in=[default.pk, empty.pk]).count() == 2

    response = operator_client.post(
        f"{ADMIN}/partnergroup/", {"action": "delete_selected", "_selected_action": [empty.pk, vip.pk], "post": "yes"}
    )
    assert response.status_code == 302
    assert list(PartnerGroup.objects.filter(program=program)) == [default]
    assert AgentAuditEntry.objects.filter(action="group.delete").count() == 2


def test_tier_rules_and_bonuses_are_edited_inline_and_audited(operator_client, program, vip):
    default = default_group(program)
    other = group_create(program=ProgramFactory(), name="Elsewhere")
    page = operator_client.get(f"{ADMIN}/partnergroup/{vip.pk}/change/").content.decode()
    assert f'<option value="{default.pk}">' in page and f'<option value="{other.pk}">' not in page

    data = {
        "name": "VIP",
        "commission_type": "percent",
        "commission_rate": "30",
        "duration_months": "0",
        "hold_days": "30",
        "discount_type": "",
        "discount_currency": "USD",
        "discount_duration": "once",
        "application_questions": "[]",
        **inlines(
            tier_rules=[
                {"direction": "demote", "metric": "sales", "period": "month", "threshold": 2, "target": default.pk}
            ],
            bonuses=[
                {
                    "name": "Ten",
                    "metric": "sales",
                    "period": "lifetime",
                    "threshold": 10,
                    "amount_cents": 5000,
                    "currency": "USD",
                    "is_active": "on",
                }
            ],
        ),
    }
    data["tier_rules-0-is_active"] = "on"
    response = operator_client.post(f"{ADMIN}/partnergroup/{vip.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    rule = TierRule.objects.get(group=vip)
    assert (rule.target_id, rule.direction, rule.threshold) == (default.pk, "demote", 2)
    assert Bonus.objects.get(group=vip).amount_cents == 5000
    assert {entry.action for entry in AgentAuditEntry.objects.all()} == {
        "group.update",
        "tier_rule.create",
        "bonus.create",
    }

    # Another program's group as the target is no choice.
    data |= {"tier_rules-0-target": other.pk}
    data |= {"tier_rules-INITIAL_FORMS": 0, "bonuses-TOTAL_FORMS": 0}
    refused = operator_client.post(f"{ADMIN}/partnergroup/{vip.pk}/change/", data)
    assert refused.status_code == 200 and TierRule.objects.filter(group=vip).count() == 1


def test_a_paid_bonus_is_not_deleted_inline(operator_client, program, vip):
    bonus = bonus_create(group=vip, name="Ten", metric="sales", threshold=10, amount_cents=1000)
    partner = PartnerProgramFactory(program=program).partner
    BonusAward.objects.create(
        bonus=bonus, partner=partner, program=program, period_key="all", figure=10, commission=CommissionFactory()
    )
    data = {
        "name": "VIP",
        "commission_type": "percent",
        "commission_rate": "30",
        "duration_months": "0",
        "hold_days": "30",
        "discount_type": "",
        "discount_currency": "USD",
        "discount_duration": "once",
        "application_questions": "[]",
        **inlines(),
        "bonuses-TOTAL_FORMS": 1,
        "bonuses-INITIAL_FORMS": 1,
        "bonuses-0-id": bonus.pk,
        "bonuses-0-group": vip.pk,
        "bonuses-0-name": "Ten",
        "bonuses-0-metric": "sales",
        "bonuses-0-period": "lifetime",
        "bonuses-0-threshold": 10,
        "bonuses-0-amount_cents": 1000,
        "bonuses-0-currency": "USD",
        "bonuses-0-is_active": "on",
        "bonuses-0-DELETE": "on",
    }
    response = operator_client.post(f"{ADMIN}/partnergroup/{vip.pk}/change/", data)

    assert response.status_code == 200
    # Django's inline refuses it (BonusAward.bonus is RESTRICT): nothing is deleted, nothing fails.
    assert "would require deleting the following protected related objects" in response.content.decode()
    assert Bonus.objects.filter(pk=bonus.pk).exists()


def test_partners_are_moved_with_partner_move(operator_client, program, vip):
    moving = PartnerProgramFactory(program=program, partner=PartnerFactory(workspace=program.workspace, name="Jo"))
    staying = PartnerProgramFactory(program=program, group=vip)
    selected = {"action": "move_partners", "_selected_action": [vip.pk]}

    form = operator_client.post(f"{ADMIN}/partnergroup/", selected)
    assert form.status_code == 200
    page = form.content.decode()
    assert "Jo (now in Default)" in page and f'value="{staying.pk}"' not in page

    response = operator_client.post(f"{ADMIN}/partnergroup/", {**selected, "apply": "1", "enrolments": [moving.pk]})

    assert response.status_code == 302
    assert PartnerProgram.objects.get(pk=moving.pk).group_id == vip.pk
    change = GroupChange.objects.get()
    assert (change.reason, change.actor, change.to_group_id) == ("owner", "admin:operator", vip.pk)
    assert WebhookEvent.objects.filter(type=EventType.PARTNER_GROUP_CHANGED, program_id=program.pk).count() == 1
    entry = AgentAuditEntry.objects.get(action="enrolment.move")
    assert entry.after["group_id"] == vip.pk and entry.after["group_change_id"] == change.pk


def test_codes_are_deactivated_never_added_or_deleted_here(operator_client, program):
    partner = PartnerProgramFactory(program=program).partner
    code = CouponCode.objects.create(program=program, partner=partner, code="JANE20")

    assert operator_client.get(f"{ADMIN}/couponcode/").status_code == 200
    assert operator_client.get(f"{ADMIN}/couponcode/add/").status_code == 403
    assert operator_client.post(f"{ADMIN}/couponcode/{code.pk}/delete/", {"post": "yes"}).status_code == 403
    response = operator_client.post(f"{ADMIN}/couponcode/", {"action": "deactivate", "_selected_action": [code.pk]})

    assert response.status_code == 302
    code.refresh_from_db()
    assert not code.is_active
    entry = AgentAuditEntry.objects.get(action="coupon_code.deactivate")
    assert entry.before["is_active"] is True and entry.key_masked == "admin:operator"


def test_group_changes_and_bonus_awards_are_read_only(operator_client, program, vip):
    enrolment = PartnerProgramFactory(program=program)
    from groups.services import Move, partner_move

    change = partner_move(enrolment=enrolment, group=vip, move=Move(reason="owner", actor="user:x"))
    assert change is not None
    bonus = bonus_create(group=vip, name="Ten", metric="sales", threshold=10, amount_cents=1000)
    award = BonusAward.objects.create(
        bonus=bonus,
        partner=enrolment.partner,
        program=program,
        period_key="all",
        figure=10,
        commission=CommissionFactory(),
    )

    for path, pk in (("groupchange", change.pk), ("bonusaward", award.pk)):
        assert operator_client.get(f"{ADMIN}/{path}/").status_code == 200
        assert operator_client.get(f"{ADMIN}/{path}/{pk}/change/").status_code == 200
        assert operator_client.get(f"{ADMIN}/{path}/add/").status_code == 403
        assert operator_client.post(f"{ADMIN}/{path}/{pk}/delete/", {"post": "yes"}).status_code == 403
    assert GroupChange.objects.count() == 1 and BonusAward.objects.count() == 1
