"""Chargebee: verification and events (see docs/billing/chargebee.md). Chargebee protects its webhooks with HTTP
basic auth (the user name and password set on the webhook); the body is an Event (chargebee/models/event) whose
`content` holds the transaction, invoice, customer and subscription."""

import base64
import binascii
import hmac
import json
from typing import Any

from tracking.payments import Outcome, Payment, PaymentParties, ignored, payment_record, payment_refund_record

from ..models import BillingConnection, BillingEvent, Platform
from .base import Delivery, EventGuide, Refused, SetupGuide, Verified

ATTRIBUTION_KEYS = ("svc_click_id", "svc_customer_key", "program_id")


def _credentials(delivery: Delivery) -> tuple[str, str] | None:
    header = delivery.headers.get("authorization", "")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic" or not encoded:
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


def _metadata(content: dict[str, Any]) -> dict[str, str]:
    """svc_* keys from the customer's or subscription's meta_data, or cf_svc_* custom fields."""
    found: dict[str, str] = {}
    for name in ("subscription", "customer"):
        obj = content.get(name) or {}
        meta = obj.get("meta_data") or {}
        if isinstance(meta, dict):
            for key in ATTRIBUTION_KEYS:
                if meta.get(key) and key not in found:
                    found[key] = str(meta[key])
        for key in ATTRIBUTION_KEYS:
            value = obj.get(f"cf_{key}")
            if value and key not in found:
                found[key] = str(value)
    return found


class ChargebeeReader:
    platform = Platform.CHARGEBEE
    guide = SetupGuide(
        where="Chargebee: Settings > Configure Chargebee > Webhooks > Add Webhook, with basic authentication",
        secret_label="Webhook password (basic authentication)",
        events=(
            EventGuide("payment_succeeded", "a sale (first invoice) or a renewal"),
            EventGuide("payment_refunded", "a refund of that payment"),
        ),
        docs="docs/billing/chargebee.md",
        needs_username=True,
        needs_site=True,
        needs_api_key=True,
    )

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        credentials = _credentials(delivery)
        if credentials is None:
            raise Refused("missing basic authentication", status=401)
        user, password = credentials
        user_ok = hmac.compare_digest(user.encode(), connection.username.encode())
        password_ok = any(hmac.compare_digest(password.encode(), secret.encode()) for secret in secrets if secret)
        if not (user_ok and password_ok):
            raise Refused("wrong basic authentication", status=401)
        try:
            payload = json.loads(delivery.body)
        except (ValueError, UnicodeDecodeError):
            raise Refused("malformed JSON", signature=False) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("id"), str) or not payload["id"]:
            raise Refused("no event id", signature=False)
        return Verified(event_id=payload["id"], event_type=str(payload.get("event_type", "")), payload=payload)

    def handle(self, event: BillingEvent) -> Outcome:
        content = event.payload.get("content") or {}
        transaction = content.get("transaction") or {}
        if event.event_type == "payment_succeeded":
            invoice = content.get("invoice") or {}
            customer = content.get("customer") or {}
            renewal = bool(invoice.get("recurring")) and invoice.get("first_invoice") is False
            subscription_id = str(transaction.get("subscription_id") or invoice.get("subscription_id") or "")
            payment = Payment(
                transaction_id=str(transaction["id"]),
                amount=int(transaction["amount"]),
                currency=str(transaction.get("currency_code", "")),
                parties=PaymentParties(
                    metadata=_metadata(content),
                    email=str(customer.get("email") or ""),
                    processor_customer_id=str(transaction.get("customer_id") or customer.get("id") or ""),
                    client_reference_id="",
                ),
                sale_type="subscription" if subscription_id else "payment",
                is_recurring=renewal,
                subscription_id=subscription_id,
            )
            return payment_record(event.program, payment, provider=self.platform, livemode=event.livemode)
        if event.event_type == "payment_refunded":
            original = transaction.get("reference_transaction_id")
            linked = [p.get("txn_id") for p in transaction.get("linked_payments") or [] if isinstance(p, dict)]
            ids = [i for i in [original, *linked] if i]
            if not ids:
                return ignored("refund without its payment")
            return payment_refund_record(
                event.program,
                *ids,
                provider=self.platform,
                livemode=event.livemode,
                refund_id=str(transaction["id"]),
                amount=int(transaction["amount"]) if transaction.get("amount") is not None else None,
            )
        return ignored(f"{event.event_type} is not used")

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        if payload.get("event_type") != "payment_succeeded":
            return None
        found = _metadata(payload.get("content") or {})
        return bool(found.get("svc_click_id") or found.get("svc_customer_key"))


reader = ChargebeeReader()
