"""Dodo Payments: Standard Webhooks verification (webhook-id, webhook-timestamp, webhook-signature; whsec_ secret)
and its payment, refund and dispute events (payload shapes: dodopayments.types Payment, Refund, Dispute). See
docs/billing/dodo.md."""

import json
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tracking.models import SaleEvent
from tracking.payment_attribution import PaymentParties
from tracking.payments import CarriedCode, Outcome, Payment, ignored, payment_record, payment_refund_record

from ..models import BillingConnection, BillingEvent, Platform
from .base import Delivery, EventGuide, Refused, SetupGuide, Verified

ATTRIBUTION_KEYS = ("svc_click_id", "svc_customer_key")


class DodoReader:
    platform = Platform.DODO
    guide = SetupGuide(
        where="Dodo Payments dashboard → Developer → Webhooks → Add Endpoint (paste the URL above)",
        secret_label="Signing Secret (whsec_…)",
        secret_help="Shown on the endpoint's page in Dodo after it is created; it starts with whsec_.",
        events=(
            EventGuide("payment.succeeded", "a sale (one-off, or a subscription's first payment or renewal)"),
            EventGuide("refund.succeeded", "a refund of the sale, partial or full"),
            EventGuide("dispute.lost", "a chargeback: the sale's commission is reversed"),
        ),
        docs="docs/billing/dodo.md",
    )

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        headers = {k.lower(): v for k, v in delivery.headers.items()}
        if not all(headers.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature")):
            raise Refused("missing Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature)")
        signed = {h: headers[h] for h in ("webhook-id", "webhook-timestamp", "webhook-signature")}
        verified = False
        for secret in secrets:
            if not secret:
                continue
            try:
                # The library checks the timestamp within 5 minutes (TIMESTAMP_TOLERANCE_SECONDS) and the signature.
                Webhook(secret).verify(delivery.body, signed)
            except (WebhookVerificationError, ValueError, TypeError):
                continue
            verified = True
            break
        if not verified:
            raise Refused("signature does not match or timestamp is stale")
        try:
            payload = json.loads(delivery.body)
        except (ValueError, UnicodeDecodeError) as error:
            raise Refused("body is not JSON", signature=False) from error
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            raise Refused("body is not a Dodo event", signature=False)
        if not isinstance(payload.get("data"), dict):
            raise Refused("event has no data", signature=False)
        return Verified(event_id=signed["webhook-id"], event_type=payload["type"], payload=payload, livemode=None)

    def handle(self, event: BillingEvent) -> Outcome:
        data = event.payload.get("data") or {}
        if event.event_type == "payment.succeeded":
            return self._payment(event, data)
        if event.event_type == "refund.succeeded":
            amount = data.get("amount")
            return payment_refund_record(
                event.program,
                data["payment_id"],
                provider=self.platform,
                livemode=event.livemode,
                refund_id=str(data["refund_id"]),
                amount=int(amount) if amount is not None else None,
                reason="refund",
            )
        if event.event_type == "dispute.lost":
            # Dispute.amount is a string of unstated units: a lost dispute takes the whole sale back.
            return payment_refund_record(
                event.program,
                data["payment_id"],
                provider=self.platform,
                livemode=event.livemode,
                refund_id=f"dispute:{data['dispute_id']}",
                amount=None,
                reason="chargeback",
            )
        return ignored(f"{event.event_type} is not used")

    def _payment(self, event: BillingEvent, data: dict[str, Any]) -> Outcome:
        customer = data.get("customer") or {}
        customer_id = str(customer.get("customer_id") or "")
        subscription_id = str(data.get("subscription_id") or "")
        metadata = {k: v for k, v in (data.get("metadata") or {}).items() if isinstance(v, str)}
        renewal = bool(
            subscription_id
            and SaleEvent.objects.filter(
                program=event.program, provider=self.platform, subscription_id=subscription_id
            ).exists()
        )
        cart = data.get("product_cart") or []
        product_id = str(cart[0].get("product_id") or "") if cart and isinstance(cart[0], dict) else ""
        discount_id = str(data.get("discount_id") or "")
        tax = data.get("tax")
        payment = Payment(
            transaction_id=str(data["payment_id"]),
            amount=int(data["total_amount"]),
            currency=str(data["currency"]),
            parties=PaymentParties(
                metadata=metadata,
                email=str(customer.get("email") or ""),
                processor_customer_id=customer_id,
                client_reference_id="",
            ),
            sale_type="subscription" if subscription_id else "payment",
            is_recurring=renewal,
            subscription_id=subscription_id,
            product_id=product_id,
            tax_cents=int(tax) if tax is not None else None,
            promotion_codes=(lambda: [CarriedCode(discount_id, "")]) if discount_id else list,
        )
        return payment_record(event.program, payment, provider=self.platform, livemode=event.livemode)

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        if payload.get("type") != "payment.succeeded":
            return None
        metadata = (payload.get("data") or {}).get("metadata") or {}
        return any(str(metadata.get(k) or "").strip() for k in ATTRIBUTION_KEYS)


reader = DodoReader()
