# ruff: noqa: F811  (fixtures imported from tests.dashboard.groups_support)
"""Who may open and post the Groups pages, and what they refuse: another workspace's program, group, rule, bonus,
partner and code ids answer 404 like ids naming nothing; a member's writes, a non-member's reads are forbidden;
signed out goes to the sign-in page; a post without CSRF is refused; bad input is a form error, never a 5xx, with
nothing saved and nothing audited."""

from html import unescape

import pytest
from django.test import Client

from agent_api.models import AgentAuditEntry
from groups.models import Bonus, CouponCode, GroupChange, PartnerGroup, TierRule
from groups.rules import bonus_create, tier_rule_create
from programs.models import PartnerProgram
from tests.dashboard.groups_support import (  # noqa: F401  (fixtures)
    admin_client,
    base,
    default,
    elsewhere,
    enrolment,
    group_post,
    member_client,
    outsider_client,
    owner,
    owner_client,
    partner,
    program,
    signed_in,
    vip,
)

pytestmark = pytest.mark.django_db

HUGE = "9" * 30


@pytest.fixture
def world(program, default, vip, enrolment, elsewhere):
    """The program's own rows, and another workspace's of each kind."""
    rule = tier_rule_create(group=vip, target=default, metric="sales", direction="demote", threshold=1)
    bonus = bonus_create(group=vip, name="Ten", metric="sales", threshold=10, amount_cents=1000)
    code = CouponCode.objects.create(program=program, partner=enrolment.partner, code="MINE")
    theirs = elsewhere["program"]
    their_default = PartnerGroup.objects.get(program=theirs, is_default=True)
    their_rule = tier_rule_create(group=elsewhere["group"], target=their_default, metric="sales", threshold=5)
    their_bonus = bonus_create(group=elsewhere["group"], name="Theirs", metric="sales", threshold=1, amount_cents=1)
    their_code = CouponCode.objects.create(program=theirs, partner=elsewhere["partner"], code="THEIRS")
    return {
        "group": vip.pk,
        "rule": rule.pk,
        "bonus": bonus.pk,
        "partner": enrolment.partner_id,
        "code": code.pk,
        "their_program": theirs.pk,
        "their_group": elsewhere["group"].pk,
        "their_rule": their_rule.pk,
        "their_bonus": their_bonus.pk,
        "their_partner": elsewhere["partner"].pk,
        "their_code": their_code.pk,
    }


# (method, path under /programs/<program>/, needs program:manage)
ROUTES = [
    ("get", "groups", False),
    ("get", "groups/new", True),
    ("post", "groups/new", True),
    ("get", "groups/{group}", False),
    ("get", "groups/{group}/edit", True),
    ("post", "groups/{group}/edit", True),
    ("get", "groups/{group}/delete", True),
    ("post", "groups/{group}/delete", True),
    ("post", "groups/{group}/tier-rules", True),
    ("post", "groups/{group}/tier-rules/{rule}/delete", True),
    ("post", "groups/{group}/bonuses", True),
    ("post", "groups/{group}/bonuses/{bonus}/delete", True),
    ("get", "partners/{partner}/group", False),
    ("post", "partners/{partner}/group/move", True),
    ("post", "partners/{partner}/codes", True),
    ("post", "codes/{code}/deactivate", True),
]


def _path(program, template: str, ids: dict[str, int]) -> str:
    return f"{base(program)}/{template.format(**ids)}"


def _nothing_written(world) -> None:
    assert PartnerGroup.objects.filter(pk=world["group"]).exists()
    assert (
        TierRule.objects.count() == 2
        and Bonus.objects.count() == 2
        and CouponCode.objects.filter(is_active=True).count() == 2
    )
    assert not GroupChange.objects.exists() and not AgentAuditEntry.objects.exists()


@pytest.mark.parametrize(("method", "template", "manage"), ROUTES)
def test_signed_out_goes_to_the_sign_in_page(client, program, world, method, template, manage):
    response = getattr(client, method)(_path(program, template, world))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    _nothing_written(world)


@pytest.mark.parametrize(("method", "template", "manage"), ROUTES)
def test_another_workspaces_owner_is_refused(outsider_client, program, world, method, template, manage):
    response = getattr(outsider_client, method)(_path(program, template, world))
    assert response.status_code in (403, 404)
    _nothing_written(world)


@pytest.mark.parametrize(("method", "template", "manage"), ROUTES)
def test_a_member_reads_but_never_writes(member_client, program, world, method, template, manage):
    response = getattr(member_client, method)(_path(program, template, world))
    assert response.status_code == (403 if manage else 200)
    if manage:
        assert "forbidden" in response.content.decode().lower() or "role" in response.content.decode()
    _nothing_written(world)


@pytest.mark.parametrize(("method", "template", "manage"), [route for route in ROUTES if "{" in route[1]])
def test_another_workspaces_ids_answer_404(owner_client, program, world, method, template, manage):
    theirs = {name: world[f"their_{name}"] for name in ("group", "rule", "bonus", "partner", "code")}
    if "{rule}" in template or "{bonus}" in template:
        # Our group with their rule or bonus, and their group with ours: both 404.
        ours_theirs = {**theirs, "group": world["group"]}
        response = getattr(owner_client, method)(_path(program, template, ours_theirs))
        assert response.status_code == 404
    response = getattr(owner_client, method)(_path(program, template, theirs))
    assert response.status_code == 404
    _nothing_written(world)


@pytest.mark.parametrize(("method", "template", "manage"), [route for route in ROUTES if "{" in route[1]])
@pytest.mark.parametrize("junk", ["0", HUGE])
def test_ids_naming_nothing_answer_404(owner_client, program, world, method, template, manage, junk):
    ids = dict.fromkeys(("group", "rule", "bonus", "partner", "code"), junk)
    response = getattr(owner_client, method)(_path(program, template, ids))
    assert response.status_code == 404
    _nothing_written(world)


@pytest.mark.parametrize(("method", "template", "manage"), ROUTES)
def test_another_workspaces_program_with_our_ids_is_refused(owner_client, world, method, template, manage):
    path = f"/programs/{world['their_program']}/{template.format(**world)}"
    response = getattr(owner_client, method)(path)
    assert response.status_code in (403, 404)
    _nothing_written(world)


@pytest.mark.parametrize(("method", "template", "manage"), [route for route in ROUTES if route[0] == "post"])
def test_a_post_without_the_csrf_token_is_refused(owner, program, world, method, template, manage):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post(_path(program, template, world), {"group": world["group"], "code": "NEW"})
    assert response.status_code == 403
    _nothing_written(world)


def test_an_admin_may_write(admin_client, program, world):
    response = admin_client.post(_path(program, "partners/{partner}/codes", world), {"code": "ADMIN1"})
    assert response.status_code == 302 and CouponCode.objects.filter(code="ADMIN1").exists()


def test_a_tier_rule_cannot_move_partners_to_another_programs_group(owner_client, program, world):
    response = owner_client.post(
        _path(program, "groups/{group}/tier-rules", world),
        {
            "direction": "promote",
            "metric": "sales",
            "period": "month",
            "threshold": "5",
            "target": world["their_group"],
        },
    )
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    _nothing_written(world)


def test_a_partner_cannot_be_moved_to_another_programs_group(owner_client, program, world):
    response = owner_client.post(
        _path(program, "partners/{partner}/group/move", world), {"group": world["their_group"]}
    )
    assert response.status_code == 400
    assert PartnerProgram.objects.get(program=program, partner_id=world["partner"]).group_id is None
    _nothing_written(world)


# --- Bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"commission_rate": "0"}, "commission_rate", "Enter a rate greater than 0."),
        ({"commission_rate": "-5"}, "commission_rate", "Enter a rate greater than 0."),
        ({"commission_rate": "150"}, "commission_rate", "A percent rate is at most 100."),
        ({"commission_type": "recurring_percent", "commission_rate": "100.01"}, "commission_rate", "at most 100"),
        ({"commission_type": "fixed", "commission_rate": HUGE}, "commission_rate", "Ensure that there are no more"),
        ({"commission_rate": "1e400"}, "commission_rate", ""),
        ({"commission_rate": "NaN"}, "commission_rate", "Enter a number."),
        ({"commission_rate": "12.34567"}, "commission_rate", "Ensure that there are no more than 4 decimal places."),
        ({"commission_type": "bogus"}, "commission_type", "Select a valid choice."),
        ({"duration_months": "-1"}, "duration_months", "greater than or equal to 0"),
        ({"duration_months": HUGE}, "duration_months", "less than or equal to 1200"),
        ({"hold_days": "-1"}, "hold_days", "greater than or equal to 0"),
        ({"hold_days": "366"}, "hold_days", "less than or equal to 365"),
        ({"name": ""}, "name", "This field is required."),
        ({"name": "x" * 101}, "name", "at most 100 characters"),
        ({"name": "vip"}, "name", "A group named vip already exists in this program"),
        ({"discount_type": "percent", "discount_percent": "150"}, "discount_percent", "at most 100"),
        ({"discount_type": "percent", "discount_percent": "0"}, "discount_percent", "greater than 0"),
        ({"discount_type": "percent", "discount_percent": "-10"}, "discount_percent", "greater than 0"),
        ({"discount_type": "percent", "discount_percent": HUGE}, "discount_percent", "Ensure that there are no more"),
        ({"discount_type": "percent"}, "discount_percent", "Enter the percent off."),
        ({"discount_type": "amount"}, "discount_amount", "Enter the amount off."),
        ({"discount_type": "amount", "discount_amount": "-5"}, "discount_amount", "greater than 0"),
        ({"discount_type": "amount", "discount_amount": "0"}, "discount_amount", "greater than 0"),
        ({"discount_type": "amount", "discount_amount": "1.234"}, "discount_amount", "at most 2 decimals"),
        (
            {"discount_type": "amount", "discount_amount": "5.5", "discount_currency": "VND"},
            "discount_amount",
            "0 decimals",
        ),
        ({"discount_type": "amount", "discount_amount": HUGE}, "discount_amount", "greater than 0"),
        (
            {"discount_type": "percent", "discount_percent": "10", "discount_duration": "repeating"},
            "discount_duration_months",
            "Enter for how many months",
        ),
        (
            {
                "discount_type": "percent",
                "discount_percent": "10",
                "discount_duration": "repeating",
                "discount_duration_months": "0",
            },
            "discount_duration_months",
            "greater than or equal to 1",
        ),
        ({"discount_type": "bogus"}, "discount_type", "Select a valid choice."),
        ({"application_questions": "x" * 201}, "application_questions", "at most 200 characters"),
        (
            {"application_questions": "\n".join(f"Q{n}" for n in range(11))},
            "application_questions",
            "at most 10 questions",
        ),
    ],
)
def test_a_bad_group_is_a_form_error(owner_client, program, vip, fields, field, message):
    before = list(PartnerGroup.objects.order_by("pk").values())

    response = owner_client.post(f"{base(program)}/groups/new", group_post(**fields))

    assert response.status_code == 400
    page = unescape(response.content.decode())
    assert "data-error-summary" in page and message in page
    assert f'id="id_{field}_error"' in page or f'id="id_{field}_0"' in page or field == "discount_type"
    assert list(PartnerGroup.objects.order_by("pk").values()) == before and not AgentAuditEntry.objects.exists()


def test_a_bad_edit_is_a_form_error_and_changes_nothing(owner_client, program, vip):
    response = owner_client.post(f"{base(program)}/groups/{vip.pk}/edit", group_post(name="VIP", commission_rate="0"))
    assert response.status_code == 400 and "Enter a rate greater than 0." in response.content.decode()
    vip.refresh_from_db()
    assert vip.commission_rate == 30 and not AgentAuditEntry.objects.exists()


def test_renaming_a_group_to_another_groups_name_is_a_form_error(owner_client, program, default, vip):
    response = owner_client.post(f"{base(program)}/groups/{vip.pk}/edit", group_post(name="DEFAULT"))
    assert response.status_code == 400
    assert "A group named DEFAULT already exists in this program" in response.content.decode()
    vip.refresh_from_db()
    assert vip.name == "VIP"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"threshold": "0"}, "Enter a whole number of sales, 1 or more."),
        ({"threshold": "-3"}, "Enter a whole number of sales, 1 or more."),
        ({"threshold": "2.5"}, "Enter a whole number of sales, 1 or more."),
        ({"threshold": HUGE}, "Enter a whole number of sales, 1 or more."),
        ({"threshold": "abc"}, "Enter a whole number of sales, 1 or more."),
        ({"metric": "revenue", "threshold": "0.001"}, "Enter a revenue greater than 0, with at most 2 decimals."),
        ({"metric": "revenue", "threshold": HUGE}, "Enter a revenue greater than 0, with at most 2 decimals."),
        ({"period": "lifetime"}, "Select a valid choice."),
        ({"direction": "sideways"}, "Select a valid choice."),
        ({"target": "abc"}, "Select a valid choice."),
    ],
)
def test_a_bad_tier_rule_is_a_form_error(owner_client, program, default, vip, fields, message):
    data = {"direction": "promote", "metric": "sales", "period": "month", "threshold": "5", "target": vip.pk, **fields}

    response = owner_client.post(f"{base(program)}/groups/{default.pk}/tier-rules", data)

    assert response.status_code == 400
    page = unescape(response.content.decode())
    assert message in page and 'id="rule-form"' in page
    assert not TierRule.objects.exists() and not AgentAuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"amount": "0"}, "Enter the bonus in USD greater than 0, with at most 2 decimals."),
        ({"amount": "-50"}, "Enter the bonus in USD greater than 0, with at most 2 decimals."),
        ({"amount": HUGE}, "Enter the bonus in USD greater than 0, with at most 2 decimals."),
        ({"amount": "1.234"}, "Enter the bonus in USD greater than 0, with at most 2 decimals."),
        ({"threshold": "0"}, "Enter a whole number of sales, 1 or more."),
        ({"name": ""}, "This field is required."),
        ({"currency": "XXX"}, "Select a valid choice."),
    ],
)
def test_a_bad_bonus_is_a_form_error(owner_client, program, vip, fields, message):
    data = {
        "name": "Ten",
        "metric": "sales",
        "period": "lifetime",
        "threshold": "10",
        "amount": "50",
        "currency": "USD",
    }

    response = owner_client.post(f"{base(program)}/groups/{vip.pk}/bonuses", {**data, **fields})

    assert response.status_code == 400
    page = unescape(response.content.decode())
    assert message in page and 'id="bonus-form"' in page
    assert not Bonus.objects.exists() and not AgentAuditEntry.objects.exists()


def test_a_paid_bonus_is_kept_with_a_message(owner_client, program, vip, partner):
    from groups.models import BonusAward
    from tests.factories import CommissionFactory

    bonus = bonus_create(group=vip, name="Ten", metric="sales", threshold=10, amount_cents=1000)
    commission = CommissionFactory()
    BonusAward.objects.create(
        bonus=bonus, partner=partner, program=program, period_key="all", figure=10, commission=commission
    )

    response = owner_client.post(f"{base(program)}/groups/{vip.pk}/bonuses/{bonus.pk}/delete")

    assert response.status_code == 302 and Bonus.objects.filter(pk=bonus.pk).exists()
    assert not AgentAuditEntry.objects.exists()
    page = owner_client.get(response["Location"]).content.decode()
    assert "This bonus has been paid to partners: deactivate it instead of deleting it" in page


def test_signed_in_as_an_inactive_member_is_forbidden(program, world):
    from tests.factories import MembershipFactory

    membership = MembershipFactory(workspace=program.workspace, role="owner", is_active=False)
    response = signed_in(membership.user).get(f"{base(program)}/groups")
    assert response.status_code == 403
