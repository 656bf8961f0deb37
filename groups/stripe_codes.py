"""A partner's coupon code as the program's checkout knows it: with Stripe connected, a promotion code on the
program's connected account for the coupon of the partner's group (PartnerGroup.stripe_coupon_id); without, the
code registered as it is (the owner makes it in their own processor).

A promotion code always names a coupon, so with Stripe connected a group with no discount has no codes: the owner
gives the group a discount first (GROUP_NO_DISCOUNT, a 400), or registers the code by hand as manual."""

import hashlib
import json
import logging
from decimal import Decimal
from typing import Any, NoReturn

import stripe
from django.conf import settings

from core.errors import ApiError, BadRequestError, ConflictError
from programs.models import Partner, PartnerProgram, Program

from . import messages
from .codes import code_deactivate, code_register, code_valid
from .models import CouponCode, DiscountDuration, DiscountType, PartnerGroup
from .selectors import enrolment_group

logger = logging.getLogger(__name__)

GROUP_NO_DISCOUNT = (
    "The partner's group {group} gives no discount: a Stripe promotion code needs one. Give the group a discount, "
    "or register the code as manual"
)
CODE_STRIPE_CHARACTERS = "A Stripe promotion code takes letters, digits and - only"
STRIPE_NOT_CONFIGURED = "Stripe is not configured on this installation"
STRIPE_REFUSED = "Stripe refused the code: {reason}"
STRIPE_UNAVAILABLE = "Stripe could not be reached; nothing was made. Try again"
STRIPE_ACCESS_REFUSED = "Stripe refused this service access to the connected account; reconnect Stripe"
# Stripe's limit on a coupon's name.
COUPON_NAME_LIMIT = 40


class StripeUnavailableError(ApiError):
    """Stripe failed or did not answer: the upstream's fault, a 502 in the route's envelope."""

    status = 502
    name = "BadGatewayError"


def partner_code_create(*, program: Program, partner: Partner, code: str) -> CouponCode:
    """The partner's new code. Without Stripe connected it is registered as manual. With Stripe connected the
    group's coupon is made on the connected account when it has none still giving the group's discount, then the
    promotion code for it, then the code is registered as stripe with the promotion code's id. Both Stripe requests
    carry idempotency keys derived from what they make, so a retry after a lost answer gets the same coupon and
    promotion code, never a second. Raises BadRequestError (invalid_coupon_code, partner_not_enrolled,
    group_has_no_discount, stripe_not_configured, stripe_refused), ConflictError coupon_code_taken (here, or a live
    promotion code spelled the same in Stripe) and StripeUnavailableError (502 stripe_unavailable: Stripe failed or
    did not answer; stripe_access_refused: the connection was revoked). No code row is left on any of them."""
    if not program.stripe_account_id:
        return code_register(program=program, partner=partner, code=code, source=CouponCode.Source.MANUAL)
    normalized = code_valid(code)
    if "_" in normalized:
        raise BadRequestError(CODE_STRIPE_CHARACTERS, code="invalid_coupon_code")
    enrolment = (
        PartnerProgram.objects.select_related("program", "group").filter(partner=partner, program=program).first()
    )
    if enrolment is None:
        raise BadRequestError(messages.CODE_PARTNER_NOT_ENROLLED, code="partner_not_enrolled")
    # Asked before Stripe is: a taken code makes no promotion code (the constraint still settles a race below).
    if CouponCode.objects.filter(program=program, code=normalized).exists():
        raise ConflictError(messages.CODE_TAKEN.format(code=normalized), code="coupon_code_taken")
    if not settings.STRIPE_SECRET_KEY:
        raise BadRequestError(STRIPE_NOT_CONFIGURED, code="stripe_not_configured")
    group = enrolment_group(enrolment)
    if not group.discount_type:
        raise BadRequestError(GROUP_NO_DISCOUNT.format(group=group.name), code="group_has_no_discount")
    coupon_id = _group_coupon(program, group)
    promotion_code_id = _promotion_code_make(program, partner, coupon_id, normalized)
    return code_register(
        program=program,
        partner=partner,
        code=normalized,
        source=CouponCode.Source.STRIPE,
        stripe_promotion_code_id=promotion_code_id,
    )


def _on_account(program: Program) -> dict[str, Any]:
    # The platform key acting on the program's connected account, as the Stripe webhook's reads do.
    return {"api_key": settings.STRIPE_SECRET_KEY, "stripe_account": program.stripe_account_id}


def coupon_params(group: PartnerGroup) -> dict[str, Any]:
    """Stripe's Coupon create parameters for the group's discount (docs.stripe.com/api/coupons/create)."""
    params: dict[str, Any] = {
        "duration": group.discount_duration,
        "name": group.name[:COUPON_NAME_LIMIT],
        "metadata": {"program_id": str(group.program_id), "group_id": str(group.pk)},
    }
    if group.discount_type == DiscountType.PERCENT:
        params["percent_off"] = group.discount_percent
    else:
        params["amount_off"] = group.discount_amount_cents
        params["currency"] = group.discount_currency.lower()
    if group.discount_duration == DiscountDuration.REPEATING:
        params["duration_in_months"] = group.discount_duration_months
    return params


def _group_coupon(program: Program, group: PartnerGroup) -> str:
    """The group's coupon on the connected account: the one it keeps while it still gives the group's discount
    (the owner may have changed the discount since, or deleted or used up the coupon in Stripe), else a new one.
    Codes made earlier keep their coupon (Stripe never moves a promotion code to another). The idempotency key
    names the group, the coupon replaced and the new one's parameters, so concurrent first codes and retries get one
    coupon."""
    params = coupon_params(group)
    if group.stripe_coupon_id and _coupon_still_gives(program, group.stripe_coupon_id, params):
        return group.stripe_coupon_id
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:24]
    # The coupon replaced is named too: replacing a deleted or used-up coupon must not replay the request that made it.
    key = f"svc-coupon:{program.pk}:{group.pk}:{group.stripe_coupon_id or 'first'}:{digest}"
    coupon = _stripe_call(program, stripe.Coupon.create, idempotency_key=key, **params, **_on_account(program))
    coupon_id: str = coupon.id
    # Replaces only the coupon this request saw: a concurrent maker's is kept (for the same terms it is this one).
    PartnerGroup.objects.filter(pk=group.pk, stripe_coupon_id=group.stripe_coupon_id).update(stripe_coupon_id=coupon_id)
    group.stripe_coupon_id = coupon_id
    return coupon_id


def _same_number(kept: Any, wanted: Any) -> bool:
    if kept is None or wanted is None:
        return kept is None and wanted is None
    return Decimal(str(kept)) == Decimal(str(wanted))


def _coupon_still_gives(program: Program, coupon_id: str, params: dict[str, Any]) -> bool:
    """Whether the coupon on the account is still valid and gives the discount `params` describe."""
    try:
        coupon = stripe.Coupon.retrieve(coupon_id, **_on_account(program)).to_dict()
    except stripe.InvalidRequestError as error:
        if error.code == "resource_missing":  # deleted in Stripe: a new one is made
            return False
        _stripe_failed(program, error)
    except stripe.StripeError as error:
        _stripe_failed(program, error)
    return bool(
        coupon.get("valid", True)
        and _same_number(coupon.get("percent_off"), params.get("percent_off"))
        and _same_number(coupon.get("amount_off"), params.get("amount_off"))
        and (coupon.get("currency") or "") == params.get("currency", coupon.get("currency") or "")
        and coupon.get("duration") == params["duration"]
        and _same_number(coupon.get("duration_in_months"), params.get("duration_in_months"))
    )


def promotion_code_key(program: Program, partner: Partner, coupon_id: str, code: str) -> str:
    """The promotion code's Idempotency-Key: the same program, partner, coupon and code replay the first answer."""
    return f"svc-promotion-code:{program.pk}:{partner.pk}:{coupon_id}:{code}"


def partner_code_deactivate(*, code: CouponCode) -> bool:
    """Stops the code attributing sales and, for a Stripe promotion code of a program still connected, turns it off
    on the connected account first, so customers no longer get its discount either (Stripe never turns one back
    on). A Stripe failure changes nothing here (StripeUnavailableError or BadRequestError, as partner_code_create's);
    a promotion code Stripe no longer has is off already. True when the code was active."""
    program = code.program
    if code.is_active and code.stripe_promotion_code_id and program.stripe_account_id and settings.STRIPE_SECRET_KEY:
        try:
            stripe.PromotionCode.modify(code.stripe_promotion_code_id, active=False, **_on_account(program))
        except stripe.InvalidRequestError as error:
            if error.code != "resource_missing":
                _stripe_failed(program, error)
        except stripe.StripeError as error:
            _stripe_failed(program, error)
    return code_deactivate(code=code)


def _promotion_code_make(program: Program, partner: Partner, coupon_id: str, code: str) -> str:
    # From API version 2025-09-30 ("clover") a promotion code names its coupon in `promotion`; the installed SDK
    # pins a version after it (stripe.api_version), and its PromotionCodeCreateParams take no `coupon`.
    promotion = _stripe_call(
        program,
        stripe.PromotionCode.create,
        promotion={"type": "coupon", "coupon": coupon_id},
        code=code,
        metadata={"program_id": str(program.pk), "partner_id": str(partner.pk)},
        idempotency_key=promotion_code_key(program, partner, coupon_id, code),
        **_on_account(program),
    )
    promotion_code_id: str = promotion.id
    return promotion_code_id


def _stripe_call(program: Program, call: Any, **params: Any) -> Any:
    try:
        return call(**params)
    except stripe.StripeError as error:
        _stripe_failed(program, error)


def _stripe_failed(program: Program, error: stripe.StripeError) -> NoReturn:
    logger.warning(
        "stripe.coupon_code_failed",
        extra={"program_id": program.pk, "error": type(error).__name__, "stripe_code": error.code},
    )
    if isinstance(error, stripe.InvalidRequestError):
        if error.code == "resource_already_exists":
            raise ConflictError(STRIPE_REFUSED.format(reason=error.user_message or error), code="coupon_code_taken")
        raise BadRequestError(STRIPE_REFUSED.format(reason=error.user_message or error), code="stripe_refused")
    if isinstance(error, stripe.AuthenticationError | stripe.PermissionError):
        # The platform's key or its access to the account, not the request: retrying will not help.
        raise StripeUnavailableError(STRIPE_ACCESS_REFUSED, code="stripe_access_refused")
    raise StripeUnavailableError(STRIPE_UNAVAILABLE, code="stripe_unavailable")
