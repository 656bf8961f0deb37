"""Events shaped like Stripe's documented objects, signed with Stripe's scheme
(Stripe-Signature: t=<unix>,v1=HMAC-SHA256(secret, "<t>.<payload>"))."""

import hashlib
import hmac
import json
import secrets
import time
from typing import Any

WEBHOOK_SECRET = "whsec_test_0123456789abcdef"
ACCOUNT = "acct_1TestConnected"


def sign(payload: str, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> str:
    t = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{t}.{payload}".encode(), hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def event(
    event_type: str, obj: dict[str, Any], *, account: str = ACCOUNT, livemode: bool = True, event_id: str | None = None
) -> dict[str, Any]:
    return {
        "id": event_id or f"evt_{secrets.token_hex(12)}",
        "object": "event",
        "account": account,
        "api_version": "2024-06-20",
        "created": int(time.time()),
        "data": {"object": obj},
        "livemode": livemode,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }


def checkout_session(
    *,
    amount: int = 4900,
    currency: str = "usd",
    mode: str = "payment",
    metadata: dict[str, Any] | None = None,
    email: str = "buyer@example.com",
    customer: str | None = "cus_Buyer1",
    client_reference_id: str | None = None,
    payment_intent: str | None = None,
) -> dict[str, Any]:
    return {
        "id": f"cs_test_{secrets.token_hex(10)}",
        "object": "checkout.session",
        "amount_subtotal": amount,
        "amount_total": amount,
        "client_reference_id": client_reference_id,
        "currency": currency,
        "customer": customer,
        "customer_details": {"email": email, "name": "Buyer"},
        "customer_email": None,
        "livemode": True,
        "metadata": metadata or {},
        "mode": mode,
        "payment_intent": payment_intent or (f"pi_{secrets.token_hex(12)}" if mode == "payment" else None),
        "payment_status": "paid",
        "status": "complete",
        "subscription": f"sub_{secrets.token_hex(8)}" if mode == "subscription" else None,
    }


def invoice(
    *,
    amount: int = 1900,
    currency: str = "usd",
    subscription: str = "sub_Abc",
    metadata: dict[str, Any] | None = None,
    email: str = "buyer@example.com",
    customer: str = "cus_Buyer1",
    billing_reason: str = "subscription_create",
    interval: str = "month",
    payment_intent: str | None = None,
) -> dict[str, Any]:
    return {
        "id": f"in_{secrets.token_hex(10)}",
        "object": "invoice",
        "amount_due": amount,
        "amount_paid": amount,
        "billing_reason": billing_reason,
        "currency": currency,
        "customer": customer,
        "customer_email": email,
        "lines": {
            "object": "list",
            "data": [
                {
                    "id": f"il_{secrets.token_hex(6)}",
                    "object": "line_item",
                    "amount": amount,
                    "metadata": {},
                    "price": {
                        "id": "price_1",
                        "object": "price",
                        "product": "prod_Pro",
                        "recurring": {"interval": interval, "interval_count": 1},
                    },
                }
            ],
        },
        "paid": True,
        "payment_intent": payment_intent or f"pi_{secrets.token_hex(12)}",
        "status": "paid",
        "subscription": subscription,
        "subscription_details": {"metadata": metadata or {}},
    }


def charge_refunded(
    *, payment_intent: str, amount: int, refunds: list[tuple[str, int]] | None, amount_refunded: int | None = None
) -> dict[str, Any]:
    refund_objects = [
        {
            "id": rid,
            "object": "refund",
            "amount": ramount,
            "payment_intent": payment_intent,
            "reason": "requested_by_customer",
            "status": "succeeded",
            "created": int(time.time()) + n,
        }
        for n, (rid, ramount) in enumerate(refunds or [])
    ]
    return {
        "id": f"ch_{secrets.token_hex(10)}",
        "object": "charge",
        "amount": amount,
        "amount_refunded": amount_refunded if amount_refunded is not None else sum(r["amount"] for r in refund_objects),
        "payment_intent": payment_intent,
        "refunded": True,
        "refunds": {"object": "list", "data": refund_objects} if refunds is not None else None,
    }


def post_event(
    client,
    payload: dict[str, Any],
    *,
    secret: str = WEBHOOK_SECRET,
    timestamp: int | None = None,
    signature: str | None = None,
):
    body = json.dumps(payload)
    header = signature if signature is not None else sign(body, secret, timestamp)
    extra = {"HTTP_STRIPE_SIGNATURE": header} if header else {}
    return client.post("/webhooks/stripe", data=body, content_type="application/json", **extra)
