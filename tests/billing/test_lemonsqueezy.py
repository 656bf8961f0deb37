"""Lemon Squeezy through the real endpoint (gunicorn, eager tasks). Payloads follow Lemon Squeezy's published webhook
examples (docs.lemonsqueezy.com/help/webhooks, "Order object" / "Subscription invoice object"): meta.event_name,
meta.custom_data, meta.test_mode, meta.webhook_id; data.type/id/attributes. The signature is computed here the way
Lemon Squeezy documents it: hex HMAC-SHA256 of the raw body with the signing secret, in X-Signature."""

import hashlib
import hmac
import json

import pytest

from billing.models import BillingEvent
from commissions.models import Commission
from tests.billing.conftest import BillingServed, connect
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.gunicorn import free_port, gunicorn_serving
from tests.served.conftest import _test_database_url
from tracking.models import SaleEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "ls_signing_secret_123"


def order(
    order_id="1001",
    *,
    total=10000,
    custom=None,
    customer_id=55,
    refunded_amount=0,
    updated="2026-12-01T10:00:00Z",
    event="order_created",
    test_mode=False,
):
    return {
        "meta": {"event_name": event, "custom_data": custom or {}, "test_mode": test_mode, "webhook_id": "wh-1"},
        "data": {
            "type": "orders",
            "id": order_id,
            "attributes": {
                "identifier": "104e18a2-d755-4d4b-80c4-a6c1dcbe1c10",
                "order_number": 1,
                "customer_id": customer_id,
                "user_email": "buyer@example.com",
                "currency": "USD",
                "total": total,
                "tax": 0,
                "status": "refunded" if refunded_amount else "paid",
                "refunded": bool(refunded_amount),
                "refunded_amount": refunded_amount,
                "first_order_item": {"product_id": 7},
                "updated_at": updated,
            },
        },
    }


def invoice(invoice_id="2001", *, total=10000, customer_id=55, reason="renewal", updated="2026-12-02T10:00:00Z"):
    return {
        "meta": {"event_name": "subscription_payment_success", "custom_data": {}, "test_mode": False},
        "data": {
            "type": "subscription-invoices",
            "id": invoice_id,
            "attributes": {
                "subscription_id": 9,
                "customer_id": customer_id,
                "user_email": "buyer@example.com",
                "currency": "USD",
                "total": total,
                "tax": 0,
                "billing_reason": reason,
                "status": "paid",
                "refunded_amount": 0,
                "updated_at": updated,
            },
        },
    }


def post(served, connection, payload, *, secret=SECRET, raw=None):
    body = raw if raw is not None else json.dumps(payload).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    name = payload["meta"]["event_name"] if payload else "order_created"
    return served.post(connection, body, {"X-Signature": signature, "X-Event-Name": name})


@pytest.fixture(scope="module")
def billing_served(django_db_setup, django_db_blocker, tmp_path_factory):
    # tests/billing/conftest.py's fixture compares ENGINE with "django.db.backends.postgresql", but settings rename
    # it to "core.db.postgresql", so it always skips; the same server, checked by vendor (reported, shared file).
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the served layer needs PostgreSQL")
    tmp = tmp_path_factory.mktemp("billing-served-ls")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / "gunicorn.log"
    env = {
        "DATABASE_URL": _test_database_url(),
        "DEBUG": "true",
        "SECRET_KEY": settings.SECRET_KEY,
        "REDIS_URL": "",
        "RATELIMIT_SHARED": "false",
        "PUBLIC_BASE_URL": url,
        "FAST_PASSWORD_HASHER": "true",
    }
    with django_db_blocker.unblock(), gunicorn_serving(env=env, log=log, workers=3, port=port):
        yield BillingServed(url=url, log=log)


@pytest.fixture
def setup():
    program = ProgramFactory(hold_days=0, commission_rate=20)
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    return program, customer, connect(program, "lemonsqueezy", SECRET)


def test_checkout_credits_partner_and_retry_records_once(billing_served, setup):
    program, customer, connection = setup
    payload = order(custom={"svc_click_id": customer.click_id})
    assert post(billing_served, connection, payload).status_code == 200
    assert post(billing_served, connection, payload).status_code == 200
    commission = Commission.objects.get(sale__processor_event_id="order_1001")
    assert commission.amount_cents == 2000
    assert SaleEvent.objects.filter(program=program).count() == 1
    assert BillingEvent.objects.get().carried_attribution is True


def test_renewal_attributed_by_customer_id_and_initial_invoice_skipped(billing_served, setup):
    program, customer, connection = setup
    assert post(billing_served, connection, order(custom={"svc_click_id": customer.click_id})).status_code == 200
    # The renewal carries no custom data: it is found by the customer's Lemon Squeezy customer id (set here; the
    # first sale does not write it on the customer).
    type(customer).objects.filter(pk=customer.pk).update(processor_customer_id="55")
    assert post(billing_served, connection, invoice("2000", reason="initial")).status_code == 200
    assert post(billing_served, connection, invoice("2001")).status_code == 200
    assert SaleEvent.objects.filter(program=program).count() == 2
    renewal = SaleEvent.objects.get(processor_event_id="subscription_invoice_2001")
    assert renewal.is_recurring
    # The factory program pays no renewals (only recurring commission types do); the outcome says it was a renewal.
    assert "renewal" in BillingEvent.objects.get(event_id__contains="2001").outcome


def test_partial_then_full_refund(billing_served, setup):
    program, customer, connection = setup
    assert post(billing_served, connection, order(custom={"svc_click_id": customer.click_id})).status_code == 200
    partial = order(event="order_refunded", refunded_amount=4000, updated="2026-12-01T11:00:00Z")
    assert post(billing_served, connection, partial).status_code == 200
    assert post(billing_served, connection, partial).status_code == 200
    commission = Commission.objects.get(sale__processor_event_id="order_1001")
    assert commission.sale_refunded_cents == 4000
    full = order(event="order_refunded", refunded_amount=10000, updated="2026-12-01T12:00:00Z")
    assert post(billing_served, connection, full).status_code == 200
    commission.refresh_from_db()
    assert commission.sale_refunded_cents == 10000
    assert commission.status == "reversed"


def test_refused_deliveries_store_nothing(billing_served, setup):
    program, customer, connection = setup
    payload = order(custom={"svc_click_id": customer.click_id})
    assert post(billing_served, connection, payload, secret="wrong").status_code == 400
    assert post(billing_served, connection, None, raw=b"{not json").status_code == 400
    body = json.dumps(payload).encode()
    assert billing_served.post(connection, body, {}).status_code == 400
    assert not BillingEvent.objects.exists()
    assert not SaleEvent.objects.exists()


def test_test_mode_is_a_test_sale(billing_served, setup):
    program, customer, connection = setup
    assert (
        post(billing_served, connection, order(custom={"svc_click_id": customer.click_id}, test_mode=True)).status_code
        == 200
    )
    sale = SaleEvent.objects.get()
    assert sale.is_test
    assert not Commission.objects.exists()
