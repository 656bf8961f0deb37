"""Lemon Squeezy: verification and events (see docs/billing/lemonsqueezy.md).

Lemon Squeezy signs the raw body: header X-Signature is the hex HMAC-SHA256 of it with the webhook's signing secret.
It signs no timestamp and sends no event id, so an event is known by "<event_name>:<data.type>:<data.id>:<updated_at>"
(a redelivery of the same state is the same event). The body is JSON:API: meta.event_name, meta.custom_data (the
checkout's custom data), meta.test_mode; data.type / data.id / data.attributes."""

import hashlib
import hmac
import json
from typing import Any

from tracking.payment_attribution import PaymentParties
from tracking.payments import Outcome, Payment, ignored, payment_record, payment_refunded_total_record

from ..models import BillingConnection, BillingEvent, Platform
from .base import Delivery, EventGuide, Refused, SetupGuide, Verified

PROVIDER = "lemonsqueezy"
SALE_EVENTS = ("order_created", "subscription_payment_success")
REFUND_EVENTS = ("order_refunded", "subscription_payment_refunded")
ATTRIBUTION_KEYS = ("svc_click_id", "svc_customer_key")


def order_transaction_id(order_id: str) -> str:
    return f"order_{order_id}"


def invoice_transaction_id(invoice_id: str) -> str:
    return f"subscription_invoice_{invoice_id}"


def _custom_data(payload: dict[str, Any]) -> dict[str, Any]:
    meta = payload.get("meta") or {}
    custom = meta.get("custom_data") if isinstance(meta, dict) else None
    return {str(k): v for k, v in custom.items()} if isinstance(custom, dict) else {}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class LemonSqueezyReader:
    platform = Platform.LEMONSQUEEZY
    guide = SetupGuide(
        where="Lemon Squeezy dashboard > Settings > Webhooks > + (add webhook): paste this URL as the Callback URL",
        secret_label="Signing secret",
        secret_help="The signing secret you type when creating the webhook (6 to 40 characters); paste the same here.",
        events=(
            EventGuide("order_created", "a sale of the order's total (one-off, and a subscription's first payment)"),
            EventGuide(
                "subscription_payment_success", "a renewal sale (the first payment is recorded by order_created)"
            ),
            EventGuide("order_refunded", "a refund of the order, up to its refunded amount so far"),
            EventGuide("subscription_payment_refunded", "a refund of the renewal, up to its refunded amount so far"),
        ),
        docs="docs/billing/lemonsqueezy.md",
    )

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        signature = delivery.headers.get("x-signature", "").strip()
        if not signature:
            raise Refused("missing X-Signature header")
        if not any(
            hmac.compare_digest(hmac.new(s.encode(), delivery.body, hashlib.sha256).hexdigest(), signature.lower())
            for s in secrets
            if s
        ):
            raise Refused("signature does not match the signing secret")
        try:
            payload = json.loads(delivery.body)
        except (ValueError, UnicodeDecodeError):
            raise Refused("body is not JSON", signature=False) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("meta"), dict):
            raise Refused("body has no meta", signature=False)
        meta = payload["meta"]
        data = payload.get("data")
        event_name = str(meta.get("event_name") or delivery.headers.get("x-event-name", "")).strip()
        if not isinstance(data, dict) or not event_name or not data.get("type") or not data.get("id"):
            raise Refused("event has no event name, data type or data id", signature=False)
        attributes = data.get("attributes")
        if not isinstance(attributes, dict):
            attributes = {}
        event_id = f"{event_name}:{data['type']}:{data['id']}:{attributes.get('updated_at') or ''}"
        return Verified(
            event_id=event_id[:255],
            event_type=event_name,
            payload=payload,
            livemode=not bool(meta.get("test_mode")),
        )

    def handle(self, event: BillingEvent) -> Outcome:
        payload = event.payload
        data = payload.get("data") or {}
        attributes = data.get("attributes") or {}
        data_id = str(data.get("id"))
        name = event.event_type
        if name == "order_created":
            if attributes.get("status") != "paid":
                return ignored(f"order status {attributes.get('status')} is not paid")
            item = attributes.get("first_order_item") or {}
            is_subscription = bool(attributes.get("subscription_id")) or bool(
                (attributes.get("first_subscription_item") or {}).get("subscription_id")
            )
            payment = self._payment(
                payload,
                attributes,
                transaction_id=order_transaction_id(data_id),
                product_id=str(item.get("product_id") or ""),
                sale_type="subscription" if is_subscription else "payment",
            )
            return payment_record(event.program, payment, provider=PROVIDER, livemode=event.livemode)
        if name == "subscription_payment_success":
            if attributes.get("billing_reason") == "initial":
                return ignored("the first subscription payment is recorded by order_created")
            if attributes.get("status") != "paid":
                return ignored(f"invoice status {attributes.get('status')} is not paid")
            payment = self._payment(
                payload,
                attributes,
                transaction_id=invoice_transaction_id(data_id),
                sale_type="subscription",
                is_recurring=True,
                subscription_id=str(attributes.get("subscription_id") or ""),
            )
            return payment_record(event.program, payment, provider=PROVIDER, livemode=event.livemode)
        if name in REFUND_EVENTS:
            payment_id = order_transaction_id(data_id) if name == "order_refunded" else invoice_transaction_id(data_id)
            return payment_refunded_total_record(
                event.program,
                payment_id,
                provider=PROVIDER,
                livemode=event.livemode,
                refunded_total=_int(attributes.get("refunded_amount")),
            )
        return ignored(f"{name} is not used")

    def _payment(
        self, payload: dict[str, Any], attributes: dict[str, Any], *, transaction_id: str, **kwargs: Any
    ) -> Payment:
        customer_id = attributes.get("customer_id")
        return Payment(
            transaction_id=transaction_id,
            amount=_int(attributes.get("total")),
            currency=str(attributes.get("currency") or ""),
            parties=PaymentParties(
                metadata=_custom_data(payload),
                email=str(attributes.get("user_email") or ""),
                processor_customer_id=str(customer_id) if customer_id else "",
                client_reference_id="",
            ),
            tax_cents=_int(attributes.get("tax")),
            **kwargs,
        )

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        if (payload.get("meta") or {}).get("event_name") not in SALE_EVENTS:
            return None
        custom = _custom_data(payload)
        return any(custom.get(key) for key in ATTRIBUTION_KEYS)


reader = LemonSqueezyReader()
