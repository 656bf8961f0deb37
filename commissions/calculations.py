"""Commission and refund arithmetic: integers in the smallest currency unit, one rounding rule.

Rounding: every result is rounded half up to a whole unit (0.5 -> 1). Refund clawbacks are computed
cumulatively: after each refund the total clawed back is round_half_up(commission × refunded_total /
sale_amount) and the refund deducts the difference from what was clawed back before. So any number of
partial refunds never claw back more than the commission, and the refund that completes the sale amount
takes exactly what is left."""

from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from dateutil.relativedelta import relativedelta

from programs.models import PERCENT_TYPES, RECURRING_TYPES


def round_half_up(value: Decimal) -> int:
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def commission_amount(*, sale_amount: int, commission_type: str, rate: Decimal) -> int:
    """Percent types: rate percent of the sale. Fixed types: rate is the amount itself."""
    if commission_type in PERCENT_TYPES:
        return round_half_up(Decimal(sale_amount) * Decimal(rate) / 100)
    return round_half_up(Decimal(rate))


def commission_applies(
    *, commission_type: str, first_sale_at: datetime | None, now: datetime, duration_months: int
) -> bool:
    """percent/fixed pay on the customer's first sale only. recurring_* pay on every sale while within
    duration_months of the first sale (0 = lifetime)."""
    if first_sale_at is None:
        return True
    if commission_type not in RECURRING_TYPES:
        return False
    if duration_months == 0:
        return True
    return now < first_sale_at + relativedelta(months=duration_months)


@dataclass(frozen=True)
class RefundStep:
    refund_amount: int  # this refund, capped at what was left to refund
    refunded_total: int  # of the sale, after this refund
    deduction: int  # commission share covered by this refund
    deducted_total: int  # commission share clawed back after this refund
    full: bool  # the sale is now refunded whole


def refund_step(
    *,
    sale_amount: int,
    commission_amount: int,
    refunded_before: int,
    deducted_before: int,
    requested: int | None,
) -> RefundStep:
    """requested None or 0 refunds the rest; any amount is capped at what is left of the sale."""
    remaining = max(0, sale_amount - refunded_before)
    refund = remaining if not requested else min(requested, remaining)
    refunded_total = refunded_before + refund
    full = refunded_total >= sale_amount
    if full:
        deducted_total = commission_amount
    else:
        deducted_total = round_half_up(Decimal(commission_amount) * refunded_total / sale_amount)
    deducted_total = max(deducted_total, deducted_before)
    return RefundStep(
        refund_amount=refund,
        refunded_total=refunded_total,
        deduction=deducted_total - deducted_before,
        deducted_total=deducted_total,
        full=full,
    )
