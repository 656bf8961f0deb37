"""A program with three groups (the default 20 %, Gold 30 % with a 10 % customer discount, Influencers a fixed
50.00): sales through links and through coupon_code in the sale API pay the right partner at the right group's
terms; a partner moved between groups keeps the terms of commissions already earned; refunds claw back a group's
commission exactly."""

from decimal import Decimal

import pytest

from commissions.models import Commission, LedgerEntry
from groups.models import CouponCode, GroupChange, PartnerGroup
from groups.selectors import default_group
from groups.services import Move, group_create, partner_move
from insight.explain import sale_explain
from programs.models import PartnerProgram
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer
from tests.tracking.sales import REFUND_URL, post_sale
from webhooks.models import EventType, WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=0, cookie_duration=30)


@pytest.fixture
def gold(program):
    return group_create(
        program=program,
        name="Gold",
        commission_type="percent",
        commission_rate=Decimal("30"),
        hold_days=0,
        discount_type="percent",
        discount_percent=Decimal("10"),
        discount_duration="once",
    )


@pytest.fixture
def influencers(program):
    return group_create(
        program=program, name="Influencers", commission_type="fixed", commission_rate=Decimal("5000"), hold_days=0
    )


def enrolled_in(program, group):
    link = ReferralLinkFactory(program=program)
    enrolment = PartnerProgram.objects.get(partner=link.partner, program=program)
    if group is not None:
        partner_move(enrolment=enrolment, group=group, move=Move(reason="owner", actor="test"))
    return link


def sale(api_client, program, **body):
    response = post_sale(api_client, program, **body)
    assert response.status_code == 200, response.content
    return Commission.objects.get(sale__processor_event_id=body["transaction_id"])


def test_every_program_has_its_default_group_holding_the_programs_terms(program):
    group = default_group(program)
    assert group.is_default and group.name == "Default"
    assert PartnerGroup.objects.filter(program=program).count() == 1


def test_sales_through_links_pay_each_partners_group_terms(api_client, program, gold, influencers):
    plain, golden, influencer = (enrolled_in(program, g) for g in (None, gold, influencers))
    for n, link in enumerate((plain, golden, influencer)):
        CustomerFactory(link=link, customer_key=f"user_{n}")
    paid = [
        sale(api_client, program, transaction_id=f"t{n}", amount_cents=10000, customer_key=f"user_{n}")
        for n in range(3)
    ]
    assert [(c.partner_id, c.amount_cents) for c in paid] == [
        (plain.partner_id, 2000),
        (golden.partner_id, 3000),
        (influencer.partner_id, 5000),
    ]
    assert [(c.group_id, c.commission_type, c.commission_rate) for c in paid] == [
        (None, "percent", Decimal("20")),
        (gold.pk, "percent", Decimal("30")),
        (influencers.pk, "fixed", Decimal("5000")),
    ]


def test_a_coupon_code_attributes_a_sale_nothing_else_attributes(api_client, program, gold):
    golden = enrolled_in(program, gold)
    CouponCode.objects.create(program=program, partner=golden.partner, code="JANE20")
    commission = sale(
        api_client, program, transaction_id="t1", amount_cents=10000, coupon_code="jane20", customer_key="u9"
    )
    assert (commission.partner_id, commission.amount_cents, commission.group_id) == (golden.partner_id, 3000, gold.pk)
    assert commission.sale.attributed_by == "coupon_code"
    # The customer now carries the key: a renewal follows it without the code.
    renewal = sale(api_client, program, transaction_id="t2", amount_cents=10000, customer_key="u9")
    assert renewal.partner_id == golden.partner_id and renewal.sale.attributed_by == "customer_key"


def test_a_click_still_wins_over_a_coupon_code(api_client, program, gold):
    clicked = enrolled_in(program, None)
    coded = enrolled_in(program, gold)
    CustomerFactory(link=clicked, customer_key="user_1")
    CouponCode.objects.create(program=program, partner=coded.partner, code="GOLD")
    commission = sale(
        api_client, program, transaction_id="t1", amount_cents=10000, customer_key="user_1", coupon_code="GOLD"
    )
    assert (commission.partner_id, commission.amount_cents) == (clicked.partner_id, 2000)


@pytest.mark.parametrize("state", ["unknown", "inactive_code", "inactive_partner", "not_enrolled"])
def test_a_code_no_partner_holds_is_the_specs_no_attribution(api_client, program, state):
    link = enrolled_in(program, None)
    code = CouponCode.objects.create(program=program, partner=link.partner, code="BOB10")
    if state == "inactive_code":
        CouponCode.objects.filter(pk=code.pk).update(is_active=False)
    elif state == "inactive_partner":
        type(link.partner).objects.filter(pk=link.partner_id).update(is_active=False)
    elif state == "not_enrolled":
        PartnerProgram.objects.filter(partner=link.partner).delete()
    body = {"transaction_id": "t1", "amount_cents": 10000, "coupon_code": "NOPE" if state == "unknown" else "BOB10"}
    response = post_sale(api_client, program, **body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "no_attribution"
    assert not Commission.objects.exists()
    from tracking.models import Customer

    assert not Customer.objects.filter(program=program).exclude(click_id__startswith="cust_").exists()


@pytest.mark.parametrize("value", [5, ["A"], {"a": 1}, "x" * 101, True])
def test_a_malformed_coupon_code_is_a_400_and_records_nothing(api_client, program, value):
    response = post_sale(api_client, program, transaction_id="t1", amount_cents=100, coupon_code=value)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "coupon_code must be a string of at most 100 characters"


def test_a_moved_partner_keeps_earlier_commissions_terms(api_client, program, gold):
    link = enrolled_in(program, None)
    CustomerFactory(link=link, customer_key="user_1")
    before = sale(api_client, program, transaction_id="t1", amount_cents=10000, customer_key="user_1")
    enrolment = PartnerProgram.objects.get(partner=link.partner, program=program)
    change = partner_move(enrolment=enrolment, group=gold, move=Move(reason="owner", actor="user:owner"))
    assert change is not None and change.from_group == default_group(program) and change.to_group == gold
    after = sale(api_client, program, transaction_id="t2", amount_cents=10000, customer_key="user_1")
    before.refresh_from_db()
    assert (before.amount_cents, before.commission_rate, before.group_id) == (2000, Decimal("20"), None)
    assert (after.amount_cents, after.commission_rate, after.group_id) == (3000, Decimal("30"), gold.pk)
    event = WebhookEvent.objects.get(type=EventType.PARTNER_GROUP_CHANGED)
    assert event.data["to_group"] == "Gold" and event.data["reason"] == "owner"
    # Moving to the group it is in changes nothing.
    assert partner_move(enrolment=enrolment, group=gold, move=Move(reason="owner")) is None
    assert GroupChange.objects.count() == 1


def test_explain_shows_the_terms_a_commission_kept(api_client, program, gold):
    link = enrolled_in(program, gold)
    CustomerFactory(link=link, customer_key="user_1")
    sale(api_client, program, transaction_id="t1", amount_cents=10000, customer_key="user_1")
    gold.commission_rate = Decimal("40")
    gold.save()
    explained = sale_explain(program=program, transaction_id="t1")["commission"]
    policy = explained["policy"]
    assert policy["group"] == {"id": gold.pk, "name": "Gold"} and policy["recorded"] is True
    assert policy["rate"] == "30"
    assert explained["arithmetic"]["matches_commission"] is True


def test_refunds_claw_back_a_group_rate_commission_exactly(api_client, program, gold):
    link = enrolled_in(program, gold)
    CustomerFactory(link=link, customer_key="user_1")
    commission = sale(api_client, program, transaction_id="t1", amount_cents=10001, customer_key="user_1")
    assert commission.amount_cents == 3000  # 30 % of 100.01, half up
    for refund_id, amount in (("r1", 3333), ("r2", 3333), ("r3", 3335)):
        response = api_client.post(
            REFUND_URL,
            {"transaction_id": "t1", "amount_cents": amount, "refund_id": refund_id},
            format="json",
            **bearer(program.raw_api_key),
        )
        assert response.status_code == 200, response.content
    commission.refresh_from_db()
    assert commission.deducted_cents == 3000 and commission.status == "reversed"
    ledger = LedgerEntry.objects.filter(partner=link.partner)
    assert sum(entry.amount_cents for entry in ledger) == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"discount_type": "percent"}, "A percent discount needs discount_percent above 0 and at most 100"),
        ({"discount_type": "amount"}, "an amount discount needs discount_amount_cents above 0"),
        (
            {"discount_type": "percent", "discount_percent": Decimal("5"), "discount_duration": "repeating"},
            "A repeating discount needs discount_duration_months of at least 1",
        ),
    ],
)
def test_an_incomplete_discount_is_refused_by_the_service_and_the_database(program, fields, message):
    from django.db import IntegrityError, transaction

    from core.errors import BadRequestError

    with pytest.raises(BadRequestError) as refused:
        group_create(program=program, name="Half done", **fields)
    assert message in str(refused.value.message)
    with pytest.raises(IntegrityError), transaction.atomic():
        PartnerGroup.objects.create(program=program, name="Raw", slug="raw", **fields)


def test_explain_names_the_coupon_code_that_attributed_a_sale(api_client, program, gold):
    golden = enrolled_in(program, gold)
    CouponCode.objects.create(program=program, partner=golden.partner, code="JANE20")
    sale(api_client, program, transaction_id="t1", amount_cents=10000, coupon_code="JANE20")
    attribution = sale_explain(program=program, transaction_id="t1")["attribution"]
    assert attribution["matched_rule"] == "coupon_code"
    assert [(rule["rule"], rule["status"]) for rule in attribution["rules"]] == [
        ("customer_key", "no_match"),
        ("click_id", "no_match"),
        ("coupon_code", "matched"),
    ]
