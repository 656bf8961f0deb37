"""Signed test Stripe events for trying the integration locally (`manage.py stripe_trigger`): shaped like the
objects Stripe sends, signed with STRIPE_WEBHOOK_SECRET by the stripe library's own signing, and POSTed to this
server's /webhooks/stripe, where they are verified and processed as Stripe's would be. Nothing reaches Stripe."""

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

import httpx
import stripe
from django.db import transaction
from django.utils import timezone

from programs.models import Program

from ..models import ProcessorEvent

# A connected account made up for local tries: Stripe never issued it, so the dashboard's Stripe page shows it
# and disconnecting it only forgets it.
LOCAL_ACCOUNT_PREFIX = "acct_local_"
TRIGGER_EVENT_TYPES = ("checkout.session.completed", "invoice.payment_succeeded", "charge.refunded")
API_VERSION = "2024-06-20"


@dataclass(frozen=True)
class TriggerPayment:
    """What the buyer paid and how the event names them; attribution reads metadata, email and customer id."""

    amount: int
    currency: str = "usd"
    payment_intent: str = ""
    click_id: str = ""
    customer_key: str = ""
    email: str = "buyer@example.com"
    stripe_customer: str = "cus_local_buyer"


def _local_id(prefix: str) -> str:
    return f"{prefix}local_{secrets.token_hex(8)}"


def _metadata(payment: TriggerPayment) -> dict[str, str]:
    metadata = {}
    if payment.click_id:
        metadata["svc_click_id"] = payment.click_id
    if payment.customer_key:
        metadata["svc_customer_key"] = payment.customer_key
    return metadata


def checkout_session(payment: TriggerPayment) -> dict[str, Any]:
    """A paid checkout in payment mode: records one sale."""
    return {
        "id": _local_id("cs_"),
        "object": "checkout.session",
        "amount_subtotal": payment.amount,
        "amount_total": payment.amount,
        "client_reference_id": None,
        "currency": payment.currency,
        "customer": payment.stripe_customer,
        "customer_details": {"email": payment.email, "name": "Test buyer"},
        "customer_email": None,
        "metadata": _metadata(payment),
        "mode": "payment",
        "payment_intent": payment.payment_intent,
        "payment_status": "paid",
        "status": "complete",
    }


def invoice(payment: TriggerPayment, *, subscription: str, renewal: bool) -> dict[str, Any]:
    """A paid subscription invoice: the first payment, or a renewal (`billing_reason: subscription_cycle`)."""
    return {
        "id": _local_id("in_"),
        "object": "invoice",
        "amount_due": payment.amount,
        "amount_paid": payment.amount,
        "billing_reason": "subscription_cycle" if renewal else "subscription_create",
        "currency": payment.currency,
        "customer": payment.stripe_customer,
        "customer_email": payment.email,
        "lines": {
            "object": "list",
            "data": [
                {
                    "id": _local_id("il_"),
                    "object": "line_item",
                    "amount": payment.amount,
                    "metadata": {},
                    "price": {
                        "id": "price_local",
                        "object": "price",
                        "product": "prod_local",
                        "recurring": {"interval": "month", "interval_count": 1},
                    },
                }
            ],
        },
        "paid": True,
        "payment_intent": payment.payment_intent,
        "status": "paid",
        "subscription": subscription,
        "subscription_details": {"metadata": _metadata(payment)},
    }


def charge_refunded(*, payment_intent: str, charged: int, refunded: int) -> dict[str, Any]:
    """A charge with one refund of `refunded` (the refund's own id, so it applies once however often sent)."""
    refund = {
        "id": _local_id("re_"),
        "object": "refund",
        "amount": refunded,
        "payment_intent": payment_intent,
        "reason": "requested_by_customer",
        "status": "succeeded",
        "created": int(time.time()),
    }
    return {
        "id": _local_id("ch_"),
        "object": "charge",
        "amount": charged,
        "amount_refunded": refunded,
        "payment_intent": payment_intent,
        "refunded": True,
        "refunds": {"object": "list", "data": [refund]},
    }


def event_of(event_type: str, obj: dict[str, Any], *, account: str, livemode: bool) -> dict[str, Any]:
    return {
        "id": _local_id("evt_"),
        "object": "event",
        "account": account,
        "api_version": API_VERSION,
        "created": int(time.time()),
        "data": {"object": obj},
        "livemode": livemode,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }


def stripe_local_account_connect(*, program: Program) -> str:
    """Connects a program that has no Stripe account to a made-up local one, so the events sent for it find it.
    A program already connected keeps its account."""
    with transaction.atomic():
        locked = Program.objects.select_for_update().get(pk=program.pk)
        if not locked.stripe_account_id:
            locked.stripe_account_id = f"{LOCAL_ACCOUNT_PREFIX}{locked.pk}_{secrets.token_hex(4)}"
            locked.stripe_connected_at = timezone.now()
            locked.save(update_fields=["stripe_account_id", "stripe_connected_at"])
    program.stripe_account_id, program.stripe_connected_at = locked.stripe_account_id, locked.stripe_connected_at
    return locked.stripe_account_id


@dataclass(frozen=True)
class Sent:
    status: int
    body: str


def stripe_event_send(*, url: str, event: dict[str, Any], secret: str, timeout: float = 30) -> Sent:
    """POSTs the event to the webhook URL, signed as Stripe signs (Stripe-Signature: t=…,v1=…)."""
    body = json.dumps(event)
    signature = stripe.WebhookSignature.generate_signature_header(body, secret)
    response = httpx.post(
        url,
        content=body.encode(),
        headers={"Content-Type": "application/json", "Stripe-Signature": signature},
        timeout=timeout,
    )
    return Sent(status=response.status_code, body=response.text)


def processor_event_wait(*, event_id: str, seconds: float) -> ProcessorEvent | None:
    """The stored event once processed (or still waiting when `seconds` pass: a worker processes it); None when
    the server stored none."""
    deadline = time.monotonic() + seconds
    while True:
        event = ProcessorEvent.objects.filter(event_id=event_id).first()
        if event is None or event.status != ProcessorEvent.Status.RECEIVED or time.monotonic() >= deadline:
            return event
        time.sleep(0.2)
