"""fraud.sale decides the sale rules: what fires given the counts tracking reads and the program's settings, and
which firing rule holds. tracking.quality only reads; these tests give the decisions their counts directly."""

from datetime import timedelta
from typing import Any

import pytest

from fraud.config import rule_update
from fraud.rules import Fired, Rule
from fraud.sale import NO_FLAGS, SaleFlags, SaleSubject, sale_flags

pytestmark = pytest.mark.django_db


class Reads:
    """Counts given, and every read asked for recorded."""

    def __init__(self, *, partner_email: str = "", sales: int = 0, customers: int = 0) -> None:
        self.emails, self.sales, self.customers = partner_email, sales, customers
        self.asked: list[tuple[str, object]] = []

    def partner_email(self, partner_id: int) -> str:
        self.asked.append(("partner_email", partner_id))
        return self.emails

    def sales_within(self, window: timedelta) -> int:
        self.asked.append(("sales_within", window))
        return self.sales

    def visitor_customers_within(self, window: timedelta) -> int:
        self.asked.append(("visitor_customers_within", window))
        return self.customers


def subject(**overrides: object) -> SaleSubject:
    fields: dict[str, Any] = {
        "customer_email": "buyer@shop.test",
        "click_id": "cust_1",
        "click_flags": [],
        "has_visitor": True,
        "partner_id": 7,
    }
    return SaleSubject(**{**fields, **overrides})


def test_with_the_defaults_only_self_referral_runs_and_it_holds(program):
    reads = Reads(partner_email="buyer@shop.test")

    flags = sale_flags(program_id=program.pk, subject=subject(), reads=reads)

    fired = Fired(Rule.SELF_REFERRAL, "the customer's email is the partner's")
    assert flags == SaleFlags(fired=(fired,), hold=fired)
    assert reads.asked == [("partner_email", 7)]


def test_nothing_fires_and_nothing_is_read_for_rules_that_are_off(program):
    rule_update(program_id=program.pk, rule=Rule.SELF_REFERRAL, enabled=False)
    reads = Reads(sales=99, customers=99)

    assert sale_flags(program_id=program.pk, subject=subject(click_flags=[Rule.PAID_ADS]), reads=reads) is NO_FLAGS
    assert reads.asked == []


@pytest.mark.parametrize(("sales", "fires"), [(3, False), (4, True)])
def test_sale_velocity_fires_above_its_threshold_and_flags_only_when_set_so(program, sales, fires):
    rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, enabled=True, action="flag", threshold=3)
    reads = Reads(sales=sales)

    flags = sale_flags(program_id=program.pk, subject=subject(), reads=reads)

    assert ("sales_within", timedelta(days=1)) in reads.asked
    assert flags.rules == ([Rule.SALE_VELOCITY] if fires else [])
    assert flags.hold is None
    if fires:
        assert flags.fired[0].reason == "4 sales from click id cust_1 within 1440 minutes"


def test_visitor_velocity_reads_nothing_without_a_visitor_and_holds_above_its_threshold(program):
    rule_update(program_id=program.pk, rule=Rule.VISITOR_VELOCITY, enabled=True, threshold=2, window_minutes=30)

    none_read = Reads(customers=9)
    assert sale_flags(program_id=program.pk, subject=subject(has_visitor=False), reads=none_read).rules == []
    assert ("visitor_customers_within", timedelta(minutes=30)) not in none_read.asked

    flags = sale_flags(program_id=program.pk, subject=subject(), reads=Reads(customers=3))
    held = Fired(Rule.VISITOR_VELOCITY, "3 customers from one visitor within 30 minutes")
    assert flags == SaleFlags(fired=(held,), hold=held)


def test_the_first_holding_rule_holds_in_the_rules_order(program):
    rule_update(program_id=program.pk, rule=Rule.SELF_REFERRAL, action="flag")
    rule_update(program_id=program.pk, rule=Rule.PAID_ADS, enabled=True)
    rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, enabled=True, threshold=1)

    flags = sale_flags(
        program_id=program.pk,
        subject=subject(click_flags=[Rule.PAID_ADS]),
        reads=Reads(partner_email="buyer@shop.test", sales=2),
    )

    assert flags.rules == [Rule.SELF_REFERRAL, Rule.PAID_ADS, Rule.SALE_VELOCITY]
    assert flags.hold is not None and flags.hold.rule == Rule.PAID_ADS
