"""The fake's coupons, promotion codes, discounts and invoices, kept per account (the platform's, or a connected
account's named by the Stripe-Account header), in the shapes of Stripe's API reference for the installed library's
API version: Coupon (docs.stripe.com/api/coupons/object), PromotionCode (docs.stripe.com/api/promotion_codes/object,
`promotion` {type, coupon} since 2025-09-30.clover), Discount (docs.stripe.com/api/discounts/object, `source`
{type, coupon}) and Invoice (docs.stripe.com/api/invoices/object; only what a test stores). Field lists follow
Stripe's own fixtures of these objects (stripe/openapi, openapi/fixtures3.json at
f6c2a48fbac2819d1feba8143d942ffc65e1c0d2).

Stripe's checks are kept where the service depends on them: a coupon needs percent_off or amount_off (with a
currency), a repeating one its months; a promotion code's coupon must exist on the account, and its code is unique
among the account's active codes, case-insensitively. The error messages for those are the fake's own wording."""

import copy
import re
import secrets
import string
import time
from typing import Any

from tests.stripe_fake.schema import StripeError, missing

PLATFORM = ""
PROMOTION_CODE_CHARACTERS = re.compile(r"^[A-Za-z0-9-]+$")


def _coupon_id() -> str:
    # Stripe's generated coupon ids are 8 upper-case letters and digits ("Z4OV52SU" in its fixtures).
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(8))


def _new_id(prefix: str) -> str:
    return prefix + "_1" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(23))


class Billing:
    """Mixed into StripeFake: its actions read `self._account_in_context` and `self._expand_in_context`, set for
    each request under the fake's lock."""

    _account_in_context: str = PLATFORM
    _expand_in_context: tuple[str, ...] = ()

    def _billing_init(self) -> None:
        self._books: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}

    def _book(self, kind: str, account: str | None = None) -> dict[str, dict[str, Any]]:
        account = self._account_in_context if account is None else account
        books = self._books.setdefault(
            account, {"coupon": {}, "promotion_code": {}, "discount": {}, "invoice": {}, "checkout.session": {}}
        )
        return books[kind]

    # --- test controls -------------------------------------------------------------------------------------------

    def coupons_on(self, account: str = PLATFORM) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self._book("coupon", account).values()))

    def promotion_codes_on(self, account: str = PLATFORM) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self._book("promotion_code", account).values()))

    def coupon_delete(self, account: str, coupon_id: str) -> None:
        """The owner deletes the coupon in Stripe (its promotion codes stop working)."""
        self._book("coupon", account).pop(coupon_id)

    def coupon_set(self, account: str, coupon_id: str, **fields: Any) -> None:
        """E.g. valid=False: the coupon is used up or past its redeem_by."""
        self._book("coupon", account)[coupon_id].update(fields)

    def promotion_code_make(self, account: str, code: str, *, percent_off: float = 10.0) -> dict[str, Any]:
        """A coupon and a promotion code made on the account by its owner, not through the service."""
        coupon = self._coupon_store(account, {"duration": "once", "percent_off": percent_off})
        return copy.deepcopy(self._promotion_code_store(account, code=code, coupon_id=coupon["id"], params={}))

    def discount_make(
        self, account: str, promotion_code_id: str, *, invoice: str | None = None, checkout_session: str | None = None
    ) -> dict[str, Any]:
        """A Discount as Stripe makes one when a promotion code is redeemed (docs.stripe.com/api/discounts/object)."""
        promotion = self._book("promotion_code", account)[promotion_code_id]
        coupon: str = promotion["promotion"]["coupon"]
        now = int(time.time())
        discount_id = _new_id("di")
        discount: dict[str, Any] = {
            "id": discount_id,
            "object": "discount",
            "checkout_session": checkout_session,
            "customer": None,
            "customer_account": None,
            "end": None,
            "invoice": invoice,
            "invoice_item": None,
            "promotion_code": promotion_code_id,
            "source": {"coupon": coupon, "type": "coupon"},
            "start": now,
            "subscription": None,
            "subscription_item": None,
        }
        self._book("discount", account)[discount_id] = discount
        return copy.deepcopy(discount)

    def invoice_store(self, account: str, invoice: dict[str, Any]) -> None:
        """The invoice GET /v1/invoices/{id} answers on the account; its `discounts` are Discount ids."""
        self._book("invoice", account)[invoice["id"]] = copy.deepcopy(invoice)

    def checkout_session_store(self, account: str, session: dict[str, Any]) -> None:
        """The Checkout Session GET /v1/checkout/sessions/{id} answers on the account, in the library's API version
        (`discounts` a list of {coupon, promotion_code} ids)."""
        self._book("checkout.session", account)[session["id"]] = copy.deepcopy(session)

    # --- actions -------------------------------------------------------------------------------------------------

    def _coupon_store(self, account: str, params: dict[str, Any]) -> dict[str, Any]:
        percent_off, amount_off = params.get("percent_off"), params.get("amount_off")
        if (percent_off is None) == (amount_off is None):
            raise StripeError("You must pass exactly one of percent_off or amount_off.", param="percent_off")
        if amount_off is not None and not params.get("currency"):
            raise missing("currency")
        duration = params.get("duration", "once")
        if duration == "repeating" and not params.get("duration_in_months"):
            raise missing("duration_in_months")
        coupon_id = params.get("id") or _coupon_id()
        coupons = self._book("coupon", account)
        if coupon_id in coupons:
            raise StripeError("Coupon already exists.", code="resource_already_exists", param="id")
        coupon = {
            "id": coupon_id,
            "object": "coupon",
            "amount_off": amount_off,
            "created": int(time.time()),
            "currency": params.get("currency"),
            "duration": duration,
            "duration_in_months": params.get("duration_in_months"),
            "livemode": False,
            "max_redemptions": params.get("max_redemptions"),
            "metadata": dict(params.get("metadata") or {}),
            "name": params.get("name"),
            # A number in the API (form values arrive as text).
            "percent_off": float(percent_off) if percent_off is not None else None,
            "redeem_by": params.get("redeem_by"),
            "times_redeemed": 0,
            "valid": True,
        }
        coupons[coupon_id] = coupon
        return coupon

    def _create_coupon(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._coupon_store(self._account_in_context, params)

    def _coupon(self, coupon_id: str, params: dict[str, Any]) -> dict[str, Any]:
        coupon = self._book("coupon").get(coupon_id)
        if coupon is None:
            raise StripeError(f"No such coupon: '{coupon_id}'", code="resource_missing", param="id", status=404)
        return coupon

    def _promotion_code_store(
        self, account: str, *, code: str, coupon_id: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        if coupon_id not in self._book("coupon", account):
            raise StripeError(
                f"No such coupon: '{coupon_id}'", code="resource_missing", param="promotion[coupon]", status=400
            )
        code = code or "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(8))
        if not PROMOTION_CODE_CHARACTERS.match(code):
            raise StripeError("Promotion codes take letters, digits and dashes only.", param="code")
        codes = self._book("promotion_code", account)
        if any(p["active"] and p["code"].upper() == code.upper() for p in codes.values()):
            raise StripeError(
                f"An active promotion code with `code: {code}` already exists.",
                code="resource_already_exists",
                param="code",
            )
        promotion = {
            "id": _new_id("promo"),
            "object": "promotion_code",
            "active": params.get("active", True),
            "code": code,
            "created": int(time.time()),
            "customer": params.get("customer"),
            "customer_account": params.get("customer_account"),
            "expires_at": params.get("expires_at"),
            "livemode": False,
            "max_redemptions": params.get("max_redemptions"),
            "metadata": dict(params.get("metadata") or {}),
            "promotion": {"coupon": coupon_id, "type": "coupon"},
            "restrictions": {"first_time_transaction": False, "minimum_amount": None, "minimum_amount_currency": None},
            "times_redeemed": 0,
        }
        codes[promotion["id"]] = promotion
        return promotion

    def _create_promotion_code(self, params: dict[str, Any]) -> dict[str, Any]:
        promotion = params.get("promotion")
        if not isinstance(promotion, dict) or "coupon" not in promotion:
            raise missing("promotion[coupon]")
        return self._promotion_code_store(
            self._account_in_context, code=params.get("code", ""), coupon_id=promotion["coupon"], params=params
        )

    def _promotion_code(self, promotion_code_id: str, params: dict[str, Any]) -> dict[str, Any]:
        promotion = self._book("promotion_code").get(promotion_code_id)
        if promotion is None:
            raise StripeError(
                f"No such promotion code: '{promotion_code_id}'", code="resource_missing", param="id", status=404
            )
        return promotion

    def _update_promotion_code(self, promotion_code_id: str, params: dict[str, Any]) -> dict[str, Any]:
        promotion = self._promotion_code(promotion_code_id, params)
        if "active" in params:
            if params["active"] and not promotion["active"]:
                # Stripe: "Once a promotion code is deactivated it cannot be reactivated" (POST /v1/promotion_codes/:id)
                raise StripeError("A promotion code cannot be reactivated once it is inactive.", param="active")
            promotion["active"] = bool(params["active"])
        if "metadata" in params:
            promotion["metadata"] = dict(params["metadata"] or {})
        return promotion

    def _checkout_session(self, session_id: str, params: dict[str, Any]) -> dict[str, Any]:
        session = self._book("checkout.session").get(session_id)
        if session is None:
            raise StripeError(
                f"No such checkout.session: '{session_id}'", code="resource_missing", param="session", status=404
            )
        answered = copy.deepcopy(session)
        if "discounts.promotion_code" in self._expand_in_context:
            codes = self._book("promotion_code")
            for discount in answered.get("discounts") or []:
                if discount.get("promotion_code") in codes:
                    discount["promotion_code"] = copy.deepcopy(codes[discount["promotion_code"]])
        return answered

    def _invoice(self, invoice_id: str, params: dict[str, Any]) -> dict[str, Any]:
        invoice = self._book("invoice").get(invoice_id)
        if invoice is None:
            raise StripeError(f"No such invoice: '{invoice_id}'", code="resource_missing", param="id", status=404)
        answered = copy.deepcopy(invoice)
        expand = set(self._expand_in_context)
        # Expanding a field of the discounts expands the discounts too, as Stripe's nested expansion does.
        if expand & {"discounts", "discounts.promotion_code"}:
            discounts = self._book("discount")
            answered["discounts"] = [copy.deepcopy(discounts.get(d, d)) for d in answered.get("discounts") or []]
            if "discounts.promotion_code" in expand:
                codes = self._book("promotion_code")
                for discount in answered["discounts"]:
                    if isinstance(discount, dict) and discount.get("promotion_code") in codes:
                        discount["promotion_code"] = copy.deepcopy(codes[discount["promotion_code"]])
        return answered
