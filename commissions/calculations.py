"""Commission and refund arithmetic: integers in the smallest currency unit, one rounding rule.

Rounding: every result is rounded half up to a whole unit (0.5 -> 1). Refund clawbacks are computed
cumulatively: after each refund the total clawed back is round_half_up(commission × refunded_total /
sale_amount) and the refund deducts the difference from what was clawed back before. So any number of
partial refunds never claw back more than the commission, and the refund that completes the sale amount
takes exactly what is left."""

from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

from dateutil.relativedelta import relativedelta

from programs.models import PERCENT_TYPES, RECURRING_TYPES


def round_half_up(value: Decimal) -> int:
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def commission_amount(*, sale_amount: int, commission_type: str, rate: Decimal) -> int:
    """Percent types: rate percent of the sale. Fixed types: rate is the amount itself."""
    if commission_type in PERCENT_TYPES:
        return round_half_up(Decimal(sale_amount) * Decimal(rate) / 100)
    return round_half_up(Decimal(rate))


class NoCommission(StrEnum):
    """Why an attributed live sale creates no commission (stored on the sale, named in the sale response)."""

    RENEWAL_NOT_RECURRING = "renewal_not_recurring"
    RECURRING_PERIOD_ENDED = "recurring_period_ended"


def recurring_period_end(*, first_commissioned_at: datetime, duration_months: int) -> datetime | None:
    """The first moment past the recurring period, in calendar months (Jan 31 + 1 month = Feb 28/29).
    None for duration 0: lifetime."""
    if duration_months == 0:
        return None
    return first_commissioned_at + relativedelta(months=duration_months)


def commission_refusal(
    *,
    commission_type: str,
    is_renewal: bool,
    sale_at: datetime,
    first_commissioned_at: datetime | None,
    duration_months: int,
) -> NoCommission | None:
    """Whether an attributed live sale pays: None when it does, else the reason it does not.

    percent and fixed: every sale except a renewal (is_recurring). recurring_percent and recurring_fixed: every
    sale, renewals included, while sale_at is before the end of duration_months from the customer's first
    commissioned sale (that sale's time; None when this would be the first one, which always pays)."""
    if commission_type not in RECURRING_TYPES:
        return NoCommission.RENEWAL_NOT_RECURRING if is_renewal else None
    if first_commissioned_at is None:
        return None
    end = recurring_period_end(first_commissioned_at=first_commissioned_at, duration_months=duration_months)
    if end is not None and sale_at >= end:
        return NoCommission.RECURRING_PERIOD_ENDED
    return None


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
