"""The step after the spec's five (and an old platform's): a payment no click, email, Stripe customer or key
attributes is credited to the partner holding the Stripe promotion code it carries (groups.models.CouponCode).

Stripe names a promotion code in a Checkout Session's `discounts` (a list of {coupon, promotion_code}; since
2025-01-27.acacia, asked of Stripe for an older event), in an Invoice's `discounts` (Discount objects, or their ids
`di_...` unless expanded) and, on API versions before 2025-03-31, in an Invoice's `discount` (one Discount object).
Each Discount's `promotion_code` is an id `promo_...`, or the PromotionCode object when expanded. A code is found
by the promotion code's id first (codes made by the service keep it), then by its `code` (codes registered by hand
or imported keep only that): read from the expanded object, or asked of the connected account when the id matches
nothing."""

from typing import Any

import stripe
from django.conf import settings

from groups.models import CouponCode
from programs.models import Program

from ..payments import CarriedCode


def _on_account(program: Program) -> dict[str, Any]:
    return {"api_key": settings.STRIPE_SECRET_KEY, "stripe_account": program.stripe_account_id}


def _can_ask(program: Program) -> bool:
    return bool(settings.STRIPE_SECRET_KEY and program.stripe_account_id)


def _carried(discounts: list[Any]) -> list[CarriedCode]:
    found: list[CarriedCode] = []
    for discount in discounts:
        if not isinstance(discount, dict):
            continue
        promotion = discount.get("promotion_code")
        if isinstance(promotion, str) and promotion:
            carried = CarriedCode(promotion)
        elif isinstance(promotion, dict) and isinstance(promotion.get("id"), str):
            code = promotion.get("code")
            carried = CarriedCode(promotion["id"], code if isinstance(code, str) else "")
        else:
            continue
        if all(known.promotion_code_id != carried.promotion_code_id for known in found):
            found.append(carried)
    return found


def session_codes(program: Program, session: dict[str, Any]) -> list[CarriedCode]:
    """The promotion codes of a Checkout Session: its `discounts` (null, or a list of {coupon, promotion_code}).
    API versions before 2025-01-27.acacia render no `discounts`: a session that was discounted (`total_details.
    amount_discount`) is then asked of the connected account, where the library's API version has them. A Stripe
    error raises: the event rolls back whole and is retried."""
    discounts = session.get("discounts")
    totals = session.get("total_details")
    discounted = (
        isinstance(totals, dict) and isinstance(totals.get("amount_discount"), int) and totals["amount_discount"] > 0
    )
    session_id = session.get("id")
    if "discounts" not in session and discounted and isinstance(session_id, str) and _can_ask(program):
        retrieved = stripe.checkout.Session.retrieve(
            session_id, expand=["discounts.promotion_code"], **_on_account(program)
        ).to_dict()
        discounts = retrieved.get("discounts")
    return _carried(discounts if isinstance(discounts, list) else [])


def invoice_codes(program: Program, invoice: dict[str, Any]) -> list[CarriedCode]:
    """The promotion codes of an Invoice as the event carries them. When its `discounts` are ids only (Stripe
    sends them unexpanded), the invoice is asked of the connected account with its discounts and their promotion
    codes expanded. A Stripe error raises: the event rolls back whole and is retried (nothing was applied)."""
    discounts = invoice.get("discounts")
    listed = list(discounts) if isinstance(discounts, list) else []
    legacy = invoice.get("discount")
    if isinstance(legacy, dict):
        listed.insert(0, legacy)
    invoice_id = invoice.get("id")
    # An id the legacy `discount` object already answers for needs no asking.
    known = {d.get("id") for d in listed if isinstance(d, dict)}
    unexpanded = any(isinstance(d, str) and d not in known for d in listed)
    if unexpanded and isinstance(invoice_id, str) and _can_ask(program):
        retrieved = stripe.Invoice.retrieve(
            invoice_id, expand=["discounts", "discounts.promotion_code"], **_on_account(program)
        ).to_dict()
        expanded = retrieved.get("discounts")
        listed = list(expanded) if isinstance(expanded, list) else []
    return _carried(listed)


def carried_code_named(program: Program, carried: CarriedCode) -> CarriedCode:
    """The carried code with its customer-facing code filled in: the code of the program's CouponCode keeping
    its promotion code id, else the expanded object's, else the promotion code as the connected account answers
    it (a Stripe error raises, and the event is retried). Left "" when none of these can say."""
    held = (
        CouponCode.objects.filter(program=program, stripe_promotion_code_id=carried.promotion_code_id)
        .values_list("code", flat=True)
        .first()
    )
    if held:
        return CarriedCode(carried.promotion_code_id, held)
    if carried.code or not _can_ask(program) or not carried.promotion_code_id.startswith("promo_"):
        return carried
    promotion = stripe.PromotionCode.retrieve(carried.promotion_code_id, **_on_account(program))
    code = getattr(promotion, "code", None)
    return CarriedCode(carried.promotion_code_id, code if isinstance(code, str) else "")
