"""Coupon codes: one partner's per program, case-insensitive, attributing a sale nothing else attributes."""

import re

from django.db import IntegrityError, transaction

from core.errors import BadRequestError, ConflictError
from programs.models import Partner, PartnerProgram, Program

from . import messages
from .models import CouponCode

CODE_PATTERN = re.compile(r"^[A-Z0-9][A-Z0-9_-]{0,99}$")


def code_normalized(code: str) -> str:
    """How a code is stored and looked up: trimmed, upper-cased (codes are case-insensitive, as Stripe's are)."""
    return code.strip().upper()


def code_valid(code: str) -> str:
    """The normalized code, or BadRequestError invalid_coupon_code: letters, digits, - and _, at most 100."""
    normalized = code_normalized(code)
    if not CODE_PATTERN.match(normalized):
        raise BadRequestError(messages.CODE_INVALID, code="invalid_coupon_code")
    return normalized


def code_partner_id(*, program_id: int, code: str) -> int | None:
    """The partner a sale carrying `code` is credited to: the active code's partner, while that partner is active
    and enrolled in the program. One indexed lookup (coupon_code_unique). None: no partner holds the code."""
    if not code:
        return None
    partner_id: int | None = (
        CouponCode.objects.filter(
            program_id=program_id,
            code=code_normalized(code),
            is_active=True,
            partner__is_active=True,
            partner__program_links__program_id=program_id,
        )
        .values_list("partner_id", flat=True)
        .first()
    )
    return partner_id


def code_register(
    *,
    program: Program,
    partner: Partner,
    code: str,
    source: str = CouponCode.Source.MANUAL,
    stripe_promotion_code_id: str = "",
) -> CouponCode:
    """Registers a code as it is for an enrolled partner. Raises BadRequestError (invalid code, partner not in
    the program) and ConflictError coupon_code_taken (another code of the program is spelled the same)."""
    normalized = code_valid(code)
    if not PartnerProgram.objects.filter(partner=partner, program=program).exists():
        raise BadRequestError(messages.CODE_PARTNER_NOT_ENROLLED, code="partner_not_enrolled")
    try:
        with transaction.atomic():
            return CouponCode.objects.create(
                program=program,
                partner=partner,
                code=normalized,
                source=source,
                stripe_promotion_code_id=stripe_promotion_code_id,
            )
    except IntegrityError:
        raise ConflictError(messages.CODE_TAKEN.format(code=normalized), code="coupon_code_taken") from None


def code_deactivate(*, code: CouponCode) -> bool:
    """Stops the code attributing sales (the row stays: sales it attributed keep naming it). True when it was
    active. Here alone: groups.stripe_codes.partner_code_deactivate, which the dashboard, admin and agent API call,
    also turns a Stripe promotion code off on the connected account."""
    changed = CouponCode.objects.filter(pk=code.pk, is_active=True).update(is_active=False)
    code.is_active = False
    return bool(changed)
