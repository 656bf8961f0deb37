"""Dodo Payments through the served billing layer. Payloads follow dodopayments.types (PaymentSucceededWebhookEvent:
business_id, type, timestamp, data=Payment; RefundSucceededWebhookEvent: data=Refund; DisputeLostWebhookEvent:
data=Dispute). Signatures are computed here the Standard Webhooks way: base64(HMAC-SHA256(base64-decoded secret after
"whsec_", "<webhook-id>.<webhook-timestamp>.<body>")), header "v1,<sig>"."""

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import pytest

from billing.models import BillingEvent
from commissions.models import Commission
from tests.billing.conftest import BillingServed, connect
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.gunicorn import free_port, gunicorn_serving
from tests.served.conftest import _test_database_url
from tracking.models import SaleEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "whsec_" + base64.b64encode(b"dodo-test-signing-secret-32bytes").decode()


def signed(
    body: bytes, *, secret: str = SECRET, timestamp: int | None = None, msg_id: str | None = None
) -> dict[str, Any]:
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    ts = str(int(time.time()) if timestamp is None else timestamp)
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": "v1," + base64.b64encode(mac).decode()}


def envelope(event_type: str, data: dict[str, Any]) -> bytes:
    # WebhookEvent: business_id, type, timestamp (ISO), data with payload_type.
    return json.dumps(
        {"business_id": "bus_test", "type": event_type, "timestamp": "2026-12-02T21:00:00Z", "data": data}
    ).encode()


def payment(
    payment_id: str, amount: int, *, customer_id: str, metadata: dict[str, Any], subscription_id=None
) -> dict[str, Any]:
    # dodopayments.types.payment.Payment (the fields a reader reads, plus required ones).
    return {
        "payload_type": "Payment",
        "payment_id": payment_id,
        "business_id": "bus_test",
        "brand_id": "bran_test",
        "created_at": "2026-12-02T21:00:00Z",
        "total_amount": amount,  # int, minor units
        "tax": 0,
        "currency": "USD",
        "status": "succeeded",
        "customer": {"customer_id": customer_id, "email": "buyer@example.com", "name": "Buyer"},
        "metadata": metadata,  # Dict[str, str]
        "subscription_id": subscription_id,
        "discount_id": None,
        "payment_provider": "stripe",
        "settlement_amount": amount,
        "settlement_currency": "USD",
        "refunds": [],
        "disputes": [],
        "product_cart": [{"product_id": "pdt_test", "quantity": 1}],
    }


def refund(refund_id: str, payment_id: str, amount: int | None, *, is_partial: bool) -> dict[str, Any]:
    # dodopayments.types.refund.Refund: amount Optional[int] (minor units), is_partial, reason Optional[str].
    return {
        "payload_type": "Refund",
        "refund_id": refund_id,
        "payment_id": payment_id,
        "business_id": "bus_test",
        "brand_id": "bran_test",
        "created_at": "2026-12-02T21:05:00Z",
        "customer": {"customer_id": "cus_1", "email": "buyer@example.com", "name": "Buyer"},
        "metadata": {},
        "status": "succeeded",
        "amount": amount,
        "currency": "USD",
        "is_partial": is_partial,
        "reason": "requested",
    }


def dispute_lost(dispute_id: str, payment_id: str) -> dict[str, Any]:
    # dodopayments.types.dispute.Dispute: amount is a string.
    return {
        "payload_type": "Dispute",
        "dispute_id": dispute_id,
        "payment_id": payment_id,
        "business_id": "bus_test",
        "created_at": "2026-12-02T21:10:00Z",
        "amount": "10000",
        "currency": "USD",
        "dispute_stage": "chargeback",
        "dispute_status": "dispute_lost",
    }


@pytest.fixture(scope="session")
def dodo_served(django_db_setup, django_db_blocker, tmp_path_factory):
    # conftest's billing_served compares ENGINE with "django.db.backends.postgresql", but settings rename it
    # "core.db.postgresql", so it always skips; the postgres marker already skips off PostgreSQL.
    from django.conf import settings

    tmp = tmp_path_factory.mktemp("dodo-served")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "DATABASE_URL": _test_database_url(),
        "DEBUG": "true",
        "SECRET_KEY": settings.SECRET_KEY,
        "REDIS_URL": "",
        "RATELIMIT_SHARED": "false",
        "PUBLIC_BASE_URL": url,
        "FAST_PASSWORD_HASHER": "true",
    }
    with django_db_blocker.unblock(), gunicorn_serving(env=env, log=tmp / "gunicorn.log", workers=3, port=port):
        yield BillingServed(url=url, log=tmp / "gunicorn.log")


@pytest.fixture
def setup():
    program = ProgramFactory(hold_days=0, commission_rate=20)
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    return program, customer, connect(program, "dodo", SECRET)


def post(dodo_served, connection, body: bytes, headers: dict[str, Any] | None = None):
    return dodo_served.post(connection, body, headers if headers is not None else signed(body))


def test_checkout_with_click_id_credits_partner_and_retry_records_once(dodo_served, setup):
    program, customer, connection = setup
    body = envelope(
        "payment.succeeded", payment("pay_1", 10000, customer_id="cus_1", metadata={"svc_click_id": customer.click_id})
    )
    headers = signed(body)
    assert post(dodo_served, connection, body, headers).status_code == 200
    assert post(dodo_served, connection, body, signed(body, msg_id=headers["webhook-id"])).status_code == 200
    assert SaleEvent.objects.filter(provider_payment_id="pay_1").count() == 1
    commission = Commission.objects.get(sale__provider_payment_id="pay_1")
    assert commission.amount_cents == 2000
    assert BillingEvent.objects.get().carried_attribution is True


def test_renewal_without_metadata_attributed_by_customer(dodo_served, setup):
    program, customer, connection = setup
    first = envelope(
        "payment.succeeded",
        payment(
            "pay_s1", 5000, customer_id="cus_9", metadata={"svc_click_id": customer.click_id}, subscription_id="sub_1"
        ),
    )
    assert post(dodo_served, connection, first).status_code == 200
    renewal = envelope(
        "payment.succeeded", payment("pay_s2", 5000, customer_id="cus_9", metadata={}, subscription_id="sub_1")
    )
    assert post(dodo_served, connection, renewal).status_code == 200
    sale = SaleEvent.objects.get(provider_payment_id="pay_s2")
    assert sale.is_recurring and sale.subscription_id == "sub_1"
    assert sale.customer_id == customer.pk


def test_partial_then_full_refund_claws_back_exactly(dodo_served, setup):
    program, customer, connection = setup
    body = envelope(
        "payment.succeeded", payment("pay_r", 10000, customer_id="cus_1", metadata={"svc_click_id": customer.click_id})
    )
    assert post(dodo_served, connection, body).status_code == 200
    partial = envelope("refund.succeeded", refund("rfnd_1", "pay_r", 4000, is_partial=True))
    assert post(dodo_served, connection, partial).status_code == 200
    commission = Commission.objects.get(sale__provider_payment_id="pay_r")
    assert (commission.sale_refunded_cents, commission.status) == (4000, "refunded")
    rest = envelope("refund.succeeded", refund("rfnd_2", "pay_r", 6000, is_partial=False))
    assert post(dodo_served, connection, rest).status_code == 200
    commission.refresh_from_db()
    assert (commission.sale_refunded_cents, commission.status) == (10000, "reversed")


def test_dispute_lost_reverses(dodo_served, setup):
    program, customer, connection = setup
    body = envelope(
        "payment.succeeded", payment("pay_d", 10000, customer_id="cus_1", metadata={"svc_click_id": customer.click_id})
    )
    assert post(dodo_served, connection, body).status_code == 200
    assert post(dodo_served, connection, envelope("dispute.lost", dispute_lost("dsp_1", "pay_d"))).status_code == 200
    assert Commission.objects.get(sale__provider_payment_id="pay_d").status == "reversed"


def test_refusals_store_nothing(dodo_served, setup):
    program, customer, connection = setup
    body = envelope("payment.succeeded", payment("pay_x", 10000, customer_id="cus_1", metadata={}))
    bad = signed(body, secret="whsec_" + base64.b64encode(b"another-secret-entirely-32bytes!").decode())
    stale = signed(body, timestamp=int(time.time()) - 600)
    for headers in (bad, stale, {}):
        assert post(dodo_served, connection, body, headers).status_code == 400
    assert post(dodo_served, connection, b"{not json").status_code == 400
    assert BillingEvent.objects.count() == 0
    assert SaleEvent.objects.count() == 0
