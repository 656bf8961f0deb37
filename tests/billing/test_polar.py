"""Polar through the served endpoint: Standard Webhooks signatures computed here the way Polar's SDK does
(base64 of the raw secret handed to standardwebhooks), order.paid and order.refunded bodies shaped as
polar.models Order (fields id, customer_id, customer.email, currency, total_amount, tax_amount, billing_reason,
subscription_id, product_id, metadata, refunded_amount)."""

import base64
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from billing.models import BillingEvent
from commissions.models import Commission
from tests.billing.conftest import connect
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "polar_whs_test_secret"


def signed(body: bytes, msg_id: str, *, at: float | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = datetime.fromtimestamp(at if at is not None else time.time(), tz=UTC)
    signature = Webhook(base64.b64encode(secret.encode()).decode()).sign(msg_id, ts, body.decode())
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(ts.timestamp())), "webhook-signature": signature}


def order(**fields) -> dict[str, Any]:
    base = {
        "id": "ord_1",
        "customer_id": "cus_1",
        "customer": {"id": "cus_1", "email": "buyer@example.com", "metadata": {}},
        "currency": "usd",
        "total_amount": 10000,
        "net_amount": 10000,
        "tax_amount": 0,
        "refunded_amount": 0,
        "billing_reason": "purchase",
        "subscription_id": None,
        "product_id": "prod_1",
        "metadata": {},
    }
    return {**base, **fields}


def body(event_type: str, data: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "timestamp": "2026-01-01T00:00:00Z", "data": data}).encode()


def test_paid_with_click_id_credits_then_refund_claws_back(billing_served):
    program = ProgramFactory(hold_days=0, commission_rate=20)
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    connection = connect(program, "polar", SECRET)
    paid = body("order.paid", order(metadata={"svc_click_id": customer.click_id}))
    for _ in range(2):
        assert billing_served.post(connection, paid, signed(paid, "msg_paid")).status_code == 200
    commission = Commission.objects.get(sale__provider_payment_id="ord_1")
    assert commission.amount_cents == 2000
    partial = body("order.refunded", order(refunded_amount=5000))
    assert billing_served.post(connection, partial, signed(partial, "msg_r1")).status_code == 200
    full = body("order.refunded", order(refunded_amount=10000))
    assert billing_served.post(connection, full, signed(full, "msg_r2")).status_code == 200
    assert Commission.objects.get(pk=commission.pk).status == "reversed"


@pytest.mark.parametrize("kind", ["bad", "stale", "malformed"])
def test_refusals_store_nothing(billing_served, kind):
    program = ProgramFactory(hold_days=0, commission_rate=20)
    connection = connect(program, "polar", SECRET)
    raw = b"{not json" if kind == "malformed" else body("order.paid", order())
    headers = signed(raw, "msg_x", at=time.time() - 3600 if kind == "stale" else None)
    if kind == "bad":
        headers = signed(raw, "msg_x", secret="other")
    response = billing_served.post(connection, raw, headers)
    assert response.status_code == 400
    assert not BillingEvent.objects.exists()
