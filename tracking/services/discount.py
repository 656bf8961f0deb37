"""The discount a visitor gets through their partner (GET /api/v1/track/discount, the browser tracker's
svc.getDiscount()): the public terms of the group the visitor's partner is in, or None. Keyless, so it answers
nothing but what a shop shows its customers anyway: never the partner, their email or their commission, never
another group. The click path does not call this: the page asks for it when it wants the discount."""

from typing import Any

from core import messages
from core.errors import NotFoundError
from core.ids import id_parse
from groups.models import DiscountDuration, DiscountType, PartnerGroup
from programs.models import PartnerProgram, Program

from ..models import Customer

CLICK_ID_MAX_LENGTH = 255


def discount_public(group: PartnerGroup) -> dict[str, Any] | None:
    """A group's customer discount as the tracker gives it to the page, or None when it has none."""
    if group.discount_type == DiscountType.PERCENT and group.discount_percent:
        percent: str | None = f"{group.discount_percent:.2f}"
        amount_cents = None
    elif group.discount_type == DiscountType.AMOUNT and group.discount_amount_cents:
        percent, amount_cents = None, group.discount_amount_cents
    else:
        return None
    repeating = group.discount_duration == DiscountDuration.REPEATING
    return {
        "type": group.discount_type,
        "percent": percent,
        "amount_cents": amount_cents,
        "currency": group.discount_currency,
        "duration": group.discount_duration,
        "duration_months": group.discount_duration_months if repeating else None,
        "group": group.name,
    }


def visitor_discount_get(*, program_id: Any, click_id: str) -> tuple[int, dict[str, Any] | None]:
    """The program's id and the discount of the partner whose click `click_id` is in that program (the customer
    the click made), or None: an unknown click, one of another program, no partner, a deactivated partner, one no
    longer enrolled, or a group without a discount.

    Raises NotFoundError (`Unknown program_id`) when program_id names no program."""
    parsed = id_parse(program_id)
    if parsed is None or not Program.objects.filter(pk=parsed).exists():
        raise NotFoundError(messages.UNKNOWN_PROGRAM_ID)
    if not click_id or len(click_id) > CLICK_ID_MAX_LENGTH:
        return parsed, None
    partner_id = (
        Customer.objects.filter(program_id=parsed, click_id=click_id, first_partner__is_active=True)
        .values_list("first_partner_id", flat=True)
        .first()
    )
    if partner_id is None:
        return parsed, None
    enrolment = PartnerProgram.objects.filter(partner_id=partner_id, program_id=parsed).values_list("group_id").first()
    if enrolment is None:
        return parsed, None
    # NULL is the default group: its row holds its discount (never made here: a GET writes nothing).
    groups = PartnerGroup.objects.filter(program_id=parsed)
    group = groups.filter(pk=enrolment[0]).first() if enrolment[0] else groups.filter(is_default=True).first()
    return parsed, (discount_public(group) if group is not None else None)
