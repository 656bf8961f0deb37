"""Polar: Standard Webhooks verification and order events (see docs/billing/polar.md).

Polar's signing secret is used as its raw bytes (Polar's SDK base64-encodes it before handing it to Standard
Webhooks); a whsec_-prefixed base64 secret is also tried, as polar/webhooks.py _signing_keys does. Refunds are read
from order.refunded (the order's cumulative refunded_amount) only; refund.* events are ignored so the same money is
never applied twice."""

import base64
import binascii
import json
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tracking.payment_attribution import PaymentParties
from tracking.payments import Outcome, Payment, ignored, payment_record, payment_refunded_total_record

from ..models import BillingConnection, BillingEvent, Platform
from .base import Delivery, EventGuide, Refused, SetupGuide, Verified

PROVIDER = "polar"
RENEWAL = "subscription_cycle"


def _signing_keys(secret: str) -> list[bytes]:
    keys = [secret.encode()]
    remainder = secret.removeprefix("whsec_")
    try:
        decoded = base64.b64decode(remainder + "=" * (-len(remainder) % 4), validate=True)
    except (binascii.Error, ValueError):
        return keys
    if decoded and decoded not in keys:
        keys.append(decoded)
    return keys


class PolarReader:
    platform = Platform.POLAR
    guide = SetupGuide(
        where="Polar dashboard > Settings > Webhooks > Add Endpoint (format: Raw)",
        secret_label="Secret",
        events=(
            EventGuide("order.paid", "a sale (first payment or renewal)"),
            EventGuide("order.refunded", "a refund of the order's refunded amount so far"),
        ),
        docs="docs/billing/polar.md",
    )

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        headers = {k.lower(): v for k, v in delivery.headers.items()}
        if not all(headers.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature")):
            raise Refused("missing Standard Webhooks signature headers")
        verified = False
        for secret in secrets:
            for key in _signing_keys(secret) if secret else []:
                try:
                    Webhook(base64.b64encode(key).decode()).verify(delivery.body, headers)
                except WebhookVerificationError:
                    continue
                except ValueError:  # the signature held; standardwebhooks then parses the body
                    raise Refused("body is not JSON", signature=False) from None
                verified = True
                break
            if verified:
                break
        if not verified:
            raise Refused("signature does not match or timestamp is outside the tolerance")
        try:
            payload = json.loads(delivery.body)
        except (ValueError, UnicodeDecodeError):
            raise Refused("body is not JSON", signature=False) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            raise Refused("body has no event type", signature=False)
        return Verified(event_id=headers["webhook-id"], event_type=payload["type"], payload=payload, livemode=None)

    def handle(self, event: BillingEvent) -> Outcome:
        data = event.payload.get("data") or {}
        if event.event_type == "order.paid":
            return self._paid(event, data)
        if event.event_type == "order.refunded":
            return payment_refunded_total_record(
                event.program,
                str(data["id"]),
                provider=PROVIDER,
                livemode=event.livemode,
                refunded_total=int(data.get("refunded_amount") or 0),
            )
        return ignored(f"{event.event_type} is not used")

    def _paid(self, event: BillingEvent, order: dict[str, Any]) -> Outcome:
        customer = order.get("customer") or {}
        metadata = {**(customer.get("metadata") or {}), **(order.get("metadata") or {})}
        subscription_id = order.get("subscription_id") or ""
        payment = Payment(
            transaction_id=str(order["id"]),
            amount=int(order.get("total_amount") or 0),
            currency=str(order.get("currency") or ""),
            parties=PaymentParties(
                metadata=metadata,
                email=customer.get("email") or "",
                processor_customer_id=order.get("customer_id") or customer.get("id") or "",
                client_reference_id="",
            ),
            sale_type="subscription" if subscription_id else "payment",
            is_recurring=order.get("billing_reason") == RENEWAL,
            subscription_id=subscription_id,
            product_id=order.get("product_id") or "",
            tax_cents=order.get("tax_amount"),
        )
        return payment_record(event.program, payment, provider=PROVIDER, livemode=event.livemode)

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        if payload.get("type") != "order.paid":
            return None
        order = payload.get("data") or {}
        metadata = {**((order.get("customer") or {}).get("metadata") or {}), **(order.get("metadata") or {})}
        return bool(metadata.get("svc_click_id") or metadata.get("svc_customer_key"))


reader = PolarReader()
