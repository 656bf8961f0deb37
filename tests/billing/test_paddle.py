"""Paddle Billing through the real endpoint: notifications signed the way Paddle signs them (Paddle-Signature:
ts=<unix>;h1=<hex HMAC-SHA256 of "<ts>:<raw body>"> with the destination's secret key, computed here with hmac),
shaped as paddle_billing's Notifications.Entities.Transaction / Adjustment and developer.paddle.com's examples."""

import hashlib
import hmac
import json
import time
from typing import Any

import pytest

from billing.models import BillingEvent
from billing.platforms.paddle import reader
from commissions.models import Commission
from tests.billing.conftest import connect
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tracking.models import SaleEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "pdl_ntfset_01test_secretkey"


def signed(body: bytes, secret: str = SECRET, ts: int | None = None) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    h1 = hmac.new(secret.encode(), f"{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"Paddle-Signature": f"ts={ts};h1={h1}"}


def notification(event_id: str, event_type: str, data: dict[str, Any]) -> bytes:
    # Event envelope: event_id (evt_…), event_type, occurred_at, notification_id, data (Paddle webhook payload).
    return json.dumps(
        {
            "event_id": event_id,
            "event_type": event_type,
            "occurred_at": "2026-12-02T10:00:00.000000Z",
            "notification_id": f"ntf_{event_id[4:]}",
            "data": data,
        }
    ).encode()


def transaction(
    txn_id: str, *, grand_total: int, custom_data: dict[str, Any] | None, origin: str = "web"
) -> dict[str, Any]:
    # Fields of Notifications.Entities.Transaction; totals are strings of minor units (TransactionTotals).
    return {
        "id": txn_id,
        "status": "completed",
        "customer_id": "ctm_01paddlebuyer",
        "subscription_id": "sub_01paddlesub",
        "origin": origin,
        "currency_code": "USD",
        "custom_data": custom_data,
        "discount_id": None,
        "billing_period": {"starts_at": "2026-12-02T10:00:00Z", "ends_at": "2027-01-02T10:00:00Z"},
        "items": [
            {
                "price": {
                    "id": "pri_01monthly",
                    "product_id": "pro_01product",
                    "billing_cycle": {"interval": "month", "frequency": 1},
                },
                "quantity": 1,
            }
        ],
        "details": {
            "totals": {
                "subtotal": str(grand_total),
                "tax": "0",
                "total": str(grand_total),
                "grand_total": str(grand_total),
                "currency_code": "USD",
            }
        },
    }


def adjustment(
    adj_id: str, txn_id: str, *, total: int, action: str = "refund", status: str = "approved"
) -> dict[str, Any]:
    # Fields of Notifications.Entities.Adjustment (AdjustmentTotals.total is a string of minor units).
    return {
        "id": adj_id,
        "action": action,
        "transaction_id": txn_id,
        "subscription_id": "sub_01paddlesub",
        "customer_id": "ctm_01paddlebuyer",
        "reason": "requested by customer",
        "currency_code": "USD",
        "status": status,
        "type": "partial",
        "totals": {
            "subtotal": str(total),
            "tax": "0",
            "total": str(total),
            "fee": "0",
            "earnings": "0",
            "currency_code": "USD",
        },
    }


def post(billing_served, connection, body: bytes, **kw):
    return billing_served.post(connection, body, signed(body, **kw))


@pytest.fixture
def setup():
    program = ProgramFactory(hold_days=0, commission_rate=20)
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    return program, customer, connect(program, "paddle", SECRET)


def test_checkout_credits_renewal_by_customer_retry_once(billing_served, setup):
    program, customer, connection = setup
    body = notification(
        "evt_01a",
        "transaction.completed",
        transaction("txn_01a", grand_total=10000, custom_data={"svc_click_id": customer.click_id}),
    )
    assert post(billing_served, connection, body).status_code == 200
    assert post(billing_served, connection, body).status_code == 200  # retried delivery
    assert SaleEvent.objects.filter(provider_payment_id="txn_01a").count() == 1
    commission = Commission.objects.get(sale__provider_payment_id="txn_01a")
    assert commission.amount_cents == 2000

    renewal = notification(
        "evt_01b",
        "transaction.completed",
        transaction("txn_01b", grand_total=10000, custom_data=None, origin="subscription_recurring"),
    )
    assert post(billing_served, connection, renewal).status_code == 200
    sale = SaleEvent.objects.get(provider_payment_id="txn_01b")
    assert sale.customer_id == customer.pk and sale.is_recurring
    # A "percent" program pays the first sale only; the renewal is attributed, with no commission.
    assert sale.subscription_id == "sub_01paddlesub" and sale.subscription_interval == "monthly"


def test_partial_then_full_refund_and_chargeback(billing_served, setup):
    program, customer, connection = setup
    for n in ("1", "2"):
        body = notification(
            f"evt_s{n}",
            "transaction.completed",
            transaction(f"txn_s{n}", grand_total=10000, custom_data={"svc_click_id": customer.click_id}),
        )
        assert post(billing_served, connection, body).status_code == 200
    pending = notification(
        "evt_r0", "adjustment.created", adjustment("adj_1", "txn_s1", total=4000, status="pending_approval")
    )
    assert post(billing_served, connection, pending).status_code == 200
    assert Commission.objects.get(sale__provider_payment_id="txn_s1").amount_cents == 2000
    approved = notification("evt_r1", "adjustment.updated", adjustment("adj_1", "txn_s1", total=4000))
    assert post(billing_served, connection, approved).status_code == 200
    assert Commission.objects.get(sale__provider_payment_id="txn_s1").status == "refunded"
    rest = notification("evt_r2", "adjustment.created", adjustment("adj_2", "txn_s1", total=6000))
    assert post(billing_served, connection, rest).status_code == 200
    first = Commission.objects.get(sale__provider_payment_id="txn_s1")
    assert first.status == "reversed"

    chargeback = notification(
        "evt_c1", "adjustment.created", adjustment("adj_3", "txn_s2", total=10000, action="chargeback")
    )
    assert post(billing_served, connection, chargeback).status_code == 200
    assert Commission.objects.get(sale__provider_payment_id="txn_s2").status == "reversed"


def test_bad_signature_stale_and_malformed_refused(billing_served, setup):
    program, customer, connection = setup
    body = notification(
        "evt_x",
        "transaction.completed",
        transaction("txn_x", grand_total=10000, custom_data={"svc_click_id": customer.click_id}),
    )
    assert post(billing_served, connection, body, secret="wrong").status_code == 400
    assert post(billing_served, connection, body, ts=int(time.time()) - 3600).status_code == 400
    assert billing_served.post(connection, body, {}).status_code == 400
    assert post(billing_served, connection, b"{not json").status_code == 400
    assert not BillingEvent.objects.exists() and not SaleEvent.objects.exists()


def test_carried_attribution():
    with_click = json.loads(
        notification(
            "evt_1", "transaction.completed", transaction("txn_1", grand_total=1, custom_data={"svc_click_id": "c"})
        )
    )
    without = json.loads(
        notification("evt_2", "transaction.completed", transaction("txn_2", grand_total=1, custom_data=None))
    )
    assert reader.carried_attribution(with_click) is True
    assert reader.carried_attribution(without) is False
    assert reader.carried_attribution({"event_type": "adjustment.created", "data": {}}) is None
