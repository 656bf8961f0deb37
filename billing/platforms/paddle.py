"""Paddle Billing: the Paddle-Signature header (ts=<unix>;h1=<hex HMAC-SHA256 of "<ts>:<raw body>">) checked with
the SDK's PaddleSignature against each secret, the timestamp within TIMESTAMP_TOLERANCE_SECONDS; sales from
transaction.completed, refunds and chargebacks from approved adjustments (see docs/billing/paddle.md)."""

import json
import time
from typing import Any

from paddle_billing.Notifications import PaddleSignature, Secret  # type: ignore[import-untyped]

from tracking.payments import Outcome, Payment, PaymentParties, ignored, payment_record, payment_refund_record

from ..models import BillingConnection, BillingEvent, Platform
from .base import TIMESTAMP_TOLERANCE_SECONDS, Delivery, EventGuide, Refused, SetupGuide, Verified

ATTRIBUTION_KEYS = ("svc_click_id", "svc_customer_key")
# Paddle's price.billing_cycle (interval, frequency) as the sale's subscription_interval.
INTERVALS: dict[tuple[object, object], str] = {
    ("month", 1): "monthly",
    ("month", 3): "quarterly",
    ("year", 1): "annual",
    ("month", 12): "annual",
}
REFUND_ACTIONS = {"refund": "refund", "chargeback": "chargeback"}


def _signature_parts(header: str) -> tuple[int, list[str]]:
    try:
        timestamp, hashes = PaddleSignature.parse(header)
    except ValueError as error:
        raise Refused("malformed Paddle-Signature header") from error
    signatures = hashes.get("h1") or []
    if not timestamp or not signatures:
        raise Refused("malformed Paddle-Signature header")
    return timestamp, signatures


def _minor(value: Any) -> int:
    """Paddle's amounts are strings of minor units ("10000")."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


class PaddleReader:
    platform = Platform.PADDLE
    guide = SetupGuide(
        where="Paddle dashboard → Developer tools → Notifications → New destination (type: URL, paste this endpoint)",
        secret_label="Secret key",
        secret_help="The destination's secret key (pdl_ntfset_…), shown on the destination after it is saved.",
        events=(
            EventGuide("transaction.completed", "a sale (first payment or subscription renewal)"),
            EventGuide("adjustment.created", "an approved refund or chargeback claws the commission back"),
            EventGuide("adjustment.updated", "a refund approved later claws the commission back"),
        ),
        docs="docs/billing/paddle.md",
    )

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        header = delivery.headers.get("paddle-signature", "")
        if not header:
            raise Refused("missing Paddle-Signature header")
        timestamp, _signatures = _signature_parts(header)
        if abs(time.time() - timestamp) > TIMESTAMP_TOLERANCE_SECONDS:
            raise Refused("Paddle-Signature timestamp is outside the tolerance")
        try:
            raw_body = delivery.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Refused("body is not UTF-8", signature=False) from error
        checker = PaddleSignature()
        try:
            valid = checker.verify(header, raw_body, [Secret(secret) for secret in secrets if secret])
        except (ConnectionRefusedError, ValueError):
            valid = False
        if not valid:
            raise Refused("Paddle signature does not match")
        try:
            payload = json.loads(raw_body)
        except ValueError as error:
            raise Refused("body is not JSON", signature=False) from error
        if not isinstance(payload, dict):
            raise Refused("body is not a JSON object", signature=False)
        event_id, event_type = payload.get("event_id"), payload.get("event_type")
        if not isinstance(event_id, str) or not event_id or not isinstance(event_type, str) or not event_type:
            raise Refused("event_id or event_type missing", signature=False)
        # A notification does not say whether it came from sandbox: the connection's environment decides.
        return Verified(event_id=event_id, event_type=event_type, payload=payload, livemode=None)

    def handle(self, event: BillingEvent) -> Outcome:
        data = event.payload.get("data") or {}
        if event.event_type == "transaction.completed":
            return self._sale(event, data)
        if event.event_type in ("adjustment.created", "adjustment.updated"):
            return self._adjustment(event, data)
        return ignored(f"{event.event_type} is not used")

    def _sale(self, event: BillingEvent, txn: dict[str, Any]) -> Outcome:
        totals = (txn.get("details") or {}).get("totals") or {}
        items = txn.get("items") or []
        price = (items[0].get("price") or {}) if items else {}
        cycle = price.get("billing_cycle") or {}
        subscription_id = txn.get("subscription_id") or ""
        custom = txn.get("custom_data") or {}
        tax = totals.get("tax")
        payment = Payment(
            transaction_id=txn["id"],
            amount=_minor(totals.get("grand_total")),
            currency=txn.get("currency_code") or "",
            # The transaction carries only customer_id (ctm_…); the email is on the customer, not fetched.
            parties=PaymentParties(
                metadata=custom if isinstance(custom, dict) else {},
                email="",
                processor_customer_id=txn.get("customer_id") or "",
                client_reference_id="",
            ),
            sale_type="subscription" if subscription_id else "payment",
            is_recurring=txn.get("origin") == "subscription_recurring",
            subscription_id=subscription_id,
            subscription_interval=INTERVALS.get((cycle.get("interval"), cycle.get("frequency")), "")
            if subscription_id
            else "",
            product_id=price.get("product_id") or "",
            tax_cents=_minor(tax) if tax is not None else None,
        )
        return payment_record(event.program, payment, provider=self.platform, livemode=event.livemode)

    def _adjustment(self, event: BillingEvent, adjustment: dict[str, Any]) -> Outcome:
        action = adjustment.get("action")
        reason = REFUND_ACTIONS.get(action or "")
        if reason is None:
            return ignored(f"adjustment action {action} is not used")
        if adjustment.get("status") != "approved":
            return ignored(f"adjustment is {adjustment.get('status')}, not approved")
        total = (adjustment.get("totals") or {}).get("total")
        return payment_refund_record(
            event.program,
            adjustment.get("transaction_id"),
            provider=self.platform,
            livemode=event.livemode,
            refund_id=adjustment["id"],
            amount=_minor(total) if total is not None else None,
            reason=reason,
        )

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        if payload.get("event_type") != "transaction.completed":
            return None
        custom = (payload.get("data") or {}).get("custom_data") or {}
        return isinstance(custom, dict) and any(custom.get(key) for key in ATTRIBUTION_KEYS)


reader = PaddleReader()
