"""Commission and refund arithmetic, without the database."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from commissions.calculations import (
    NoCommission,
    commission_amount,
    commission_refusal,
    recurring_period_end,
    refund_step,
    round_half_up,
)

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("0.5"), 1),
        (Decimal("1.49"), 1),
        (Decimal("1.5"), 2),
        (Decimal("2.5"), 3),
        (Decimal("0.4999"), 0),
    ],
)
def test_it_rounds_half_up(value, expected):
    assert round_half_up(value) == expected


@pytest.mark.parametrize(
    ("amount", "commission_type", "rate", "expected"),
    [
        (10000, "percent", Decimal("20"), 2000),
        (4999, "percent", Decimal("20"), 1000),  # 999.8 -> 1000
        (4997, "percent", Decimal("10"), 500),  # 499.7 -> 500
        (1, "percent", Decimal("20"), 0),  # 0.2 -> 0
        (3, "percent", Decimal("50"), 2),  # 1.5 -> 2: half up, not to even
        (5, "percent", Decimal("10"), 1),  # 0.5 -> 1
        (1999, "recurring_percent", Decimal("12.5"), 250),  # 249.875 -> 250
        (250000000, "percent", Decimal("30"), 75000000),  # VND: no minor unit, same integer maths
        (10000, "fixed", Decimal("1500"), 1500),
        (10, "fixed", Decimal("1500"), 1500),  # a fixed commission does not depend on the amount
        (10000, "recurring_fixed", Decimal("299.5"), 300),
    ],
)
def test_commission_amounts(amount, commission_type, rate, expected):
    assert commission_amount(sale_amount=amount, commission_type=commission_type, rate=rate) == expected


def refusal(kind: str, *, renewal: bool = False, first=None, at=NOW, months: int = 0):
    return commission_refusal(
        commission_type=kind, is_renewal=renewal, sale_at=at, first_commissioned_at=first, duration_months=months
    )


class TestWhichSalesPay:
    @pytest.mark.parametrize("kind", ["percent", "fixed"])
    def test_one_off_types_pay_every_sale_that_is_not_a_renewal(self, kind):
        assert refusal(kind) is None
        # The customer's history does not matter: a tenth sale, years later, pays as the first did.
        assert refusal(kind, first=NOW - timedelta(days=3650), months=3) is None

    @pytest.mark.parametrize("kind", ["percent", "fixed"])
    def test_one_off_types_never_pay_a_renewal(self, kind):
        assert refusal(kind, renewal=True) == NoCommission.RENEWAL_NOT_RECURRING
        assert refusal(kind, renewal=True, first=None, months=0) == NoCommission.RENEWAL_NOT_RECURRING

    @pytest.mark.parametrize("kind", ["recurring_percent", "recurring_fixed"])
    @pytest.mark.parametrize("renewal", [False, True])
    def test_the_first_commissioned_sale_of_a_recurring_type_always_pays(self, kind, renewal):
        assert refusal(kind, renewal=renewal, first=None, months=1) is None

    @pytest.mark.parametrize("kind", ["recurring_percent", "recurring_fixed"])
    @pytest.mark.parametrize("renewal", [False, True])
    def test_recurring_types_pay_within_the_duration_renewals_included(self, kind, renewal):
        first = datetime(2026, 1, 31, tzinfo=UTC)
        # 3 months after Jan 31 is Apr 30 (calendar months, clamped to the month's end); the end is excluded.
        assert (
            refusal(kind, renewal=renewal, first=first, at=datetime(2026, 4, 29, 23, 59, tzinfo=UTC), months=3) is None
        )
        assert (
            refusal(kind, renewal=renewal, first=first, at=datetime(2026, 4, 30, tzinfo=UTC), months=3)
            == NoCommission.RECURRING_PERIOD_ENDED
        )

    def test_duration_zero_is_lifetime(self):
        assert refusal("recurring_percent", renewal=True, first=NOW - timedelta(days=3650), months=0) is None

    def test_the_period_end(self):
        first = datetime(2024, 1, 31, 10, tzinfo=UTC)
        assert recurring_period_end(first_commissioned_at=first, duration_months=1) == datetime(
            2024, 2, 29, 10, tzinfo=UTC
        )
        assert recurring_period_end(first_commissioned_at=first, duration_months=12) == datetime(
            2025, 1, 31, 10, tzinfo=UTC
        )
        assert recurring_period_end(first_commissioned_at=first, duration_months=0) is None


class TestRefundSteps:
    def test_a_partial_refund_claws_back_its_share(self):
        step = refund_step(
            sale_amount=10000, commission_amount=2000, refunded_before=0, deducted_before=0, requested=2500
        )
        assert (step.refund_amount, step.refunded_total, step.deduction, step.deducted_total, step.full) == (
            2500,
            2500,
            500,
            500,
            False,
        )

    def test_omitted_or_zero_refunds_the_rest(self):
        for requested in (None, 0):
            step = refund_step(
                sale_amount=10000,
                commission_amount=2000,
                refunded_before=2500,
                deducted_before=500,
                requested=requested,
            )
            assert (step.refund_amount, step.deduction, step.full) == (7500, 1500, True)

    def test_a_refund_is_capped_at_what_is_left_of_the_sale(self):
        step = refund_step(
            sale_amount=10000,
            commission_amount=2000,
            refunded_before=9000,
            deducted_before=1800,
            requested=5000,
        )
        assert (step.refund_amount, step.refunded_total, step.deduction, step.full) == (
            1000,
            10000,
            200,
            True,
        )

    def test_many_partial_refunds_never_claw_back_more_than_the_commission(self):
        # 7 refunds of 1,500 on a 10,000 sale with a 3,333 commission: the 7th passes the sale amount.
        sale, commission = 10000, 3333
        refunded = deducted = 0
        deductions = []
        for _ in range(7):
            step = refund_step(
                sale_amount=sale,
                commission_amount=commission,
                refunded_before=refunded,
                deducted_before=deducted,
                requested=1500,
            )
            refunded, deducted = step.refunded_total, step.deducted_total
            deductions.append(step.deduction)
        assert refunded == sale
        assert sum(deductions) == commission
        assert deductions == [500, 500, 500, 500, 500, 500, 333]
        assert step.full

    def test_rounding_drift_is_absorbed_cumulatively(self):
        # Three refunds of a third: each share is 33.33..., the cumulative rule gives 33, 34, 33.
        refunded = deducted = 0
        deductions = []
        for requested in (1, 1, 1):
            step = refund_step(
                sale_amount=3,
                commission_amount=100,
                refunded_before=refunded,
                deducted_before=deducted,
                requested=requested,
            )
            refunded, deducted = step.refunded_total, step.deducted_total
            deductions.append(step.deduction)
        assert deductions == [33, 34, 33] and sum(deductions) == 100

    def test_vnd_amounts(self):
        step = refund_step(
            sale_amount=1_990_000,
            commission_amount=398_000,
            refunded_before=0,
            deducted_before=0,
            requested=995_000,
        )
        assert step.deduction == 199_000

    def test_a_zero_commission_deducts_nothing(self):
        step = refund_step(sale_amount=1, commission_amount=0, refunded_before=0, deducted_before=0, requested=None)
        assert step.deduction == 0 and step.full
