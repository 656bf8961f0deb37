"""Connect webhook events as Stripe sends them (the connected account's id in `account`), signed with Stripe's
scheme by the helper the inbound Stripe tests use."""

import json
import secrets
import time
from typing import Any

import stripe

from tests.stripe_payloads import WEBHOOK_SECRET, sign


def event(event_type: str, obj: dict[str, Any], account: str | None = None) -> dict[str, Any]:
    """E.g. event("account.updated", server.account(acct_id), account=acct_id)."""
    payload: dict[str, Any] = {
        "id": f"evt_{secrets.token_hex(12)}",
        "object": "event",
        "api_version": stripe.api_version,
        "created": int(time.time()),
        "data": {"object": obj},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }
    if account is not None:
        payload["account"] = account
    return payload


def signed(payload: dict[str, Any] | str, secret: str = WEBHOOK_SECRET) -> tuple[str, str]:
    """The body to post and its Stripe-Signature header."""
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return body, sign(body, secret)
