"""Chargebee through the real server. Bodies follow chargebee 3.29's models (chargebee/models/event: id, occurred_at,
event_type, api_version, content; transaction: id, amount, currency_code, customer_id, subscription_id, type,
reference_transaction_id; invoice: id, recurring, first_invoice; customer: id, email, meta_data). Chargebee
authenticates with HTTP basic auth, sent here by httpx as Chargebee sends it."""

import json
from typing import Any

import pytest

from commissions.models import Commission
from tests.billing.conftest import connect
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tracking.models import SaleEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

USER, PASSWORD = "cb-hook", "cb-password-1"


def _event(event_id: str, event_type: str, transaction: dict[str, Any], **content) -> bytes:
    return json.dumps(
        {
            "id": event_id,
            "occurred_at": 1764700000,
            "event_type": event_type,
            "api_version": "v2",
            "webhook_status": "scheduled",
            "content": {"transaction": transaction, **content},
        }
    ).encode()


def _sale(txn: str, click_id: str, amount: int = 10000) -> bytes:
    return _event(
        f"ev_{txn}",
        "payment_succeeded",
        {"id": txn, "amount": amount, "currency_code": "USD", "customer_id": "cus_1", "type": "payment"},
        invoice={"id": "inv_1", "recurring": False, "first_invoice": True},
        customer={"id": "cus_1", "email": "buyer@example.com", "meta_data": {"svc_click_id": click_id}},
    )


def _setup():
    program = ProgramFactory(hold_days=0, commission_rate=20)
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    connection = connect(program, "chargebee", PASSWORD, username=USER)
    return program, customer, connection


def test_sale_credits_partner_once_and_refunds_claw_back(billing_served):
    program, customer, connection = _setup()
    body = _sale("txn_1", customer.click_id)
    for _ in range(2):
        assert billing_served.post(connection, body, {}, auth=(USER, PASSWORD)).status_code == 200
    sale = SaleEvent.objects.get(provider_payment_id="txn_1")
    assert Commission.objects.get(sale=sale).amount_cents == 2000
    refund = _event(
        "ev_rf_1",
        "payment_refunded",
        {
            "id": "txn_rf_1",
            "amount": 4000,
            "currency_code": "USD",
            "type": "refund",
            "reference_transaction_id": "txn_1",
        },
    )
    assert billing_served.post(connection, refund, {}, auth=(USER, PASSWORD)).status_code == 200
    commission = Commission.objects.get(sale=sale)
    # A partial refund claws back its share: 40% of the 2000 commission is deducted, 1200 stays.
    assert (commission.amount_cents - commission.deducted_cents, commission.sale_refunded_cents) == (1200, 4000)


@pytest.mark.parametrize("auth", [None, (USER, "wrong"), ("other", PASSWORD)])
def test_missing_or_wrong_credentials_refused(billing_served, auth):
    program, customer, connection = _setup()
    response = billing_served.post(connection, _sale("txn_2", customer.click_id), {}, auth=auth)
    assert response.status_code == 401
    assert not SaleEvent.objects.filter(provider_payment_id="txn_2").exists()


def test_malformed_json_refused(billing_served):
    program, customer, connection = _setup()
    assert billing_served.post(connection, b"{not json", {}, auth=(USER, PASSWORD)).status_code == 400


# The served layer skips here (conftest compares the engine to django.db.backends.postgresql, settings swap it for
# core.db.postgresql): verify is also checked directly.
def _delivery(body: bytes, auth: tuple[str, str] | None):
    import base64
    from datetime import UTC, datetime

    from billing.platforms.base import Delivery

    headers = {}
    if auth:
        headers["authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    return Delivery(body=body, headers=headers, received_at=datetime.now(UTC))


@pytest.mark.parametrize("auth", [None, (USER, "wrong"), ("other", PASSWORD)])
def test_verify_refuses_credentials_directly(auth):
    from billing.models import BillingConnection
    from billing.platforms.base import Refused
    from billing.platforms.chargebee import reader

    with pytest.raises(Refused) as refused:
        reader.verify(BillingConnection(username=USER), _delivery(_sale("txn_3", "c"), auth), [PASSWORD])
    assert refused.value.status == 401


def test_verify_accepts_previous_secret_and_reads_event():
    from billing.models import BillingConnection
    from billing.platforms.chargebee import reader

    verified = reader.verify(
        BillingConnection(username=USER), _delivery(_sale("txn_4", "c"), (USER, PASSWORD)), ["new", PASSWORD]
    )
    assert (verified.event_id, verified.event_type) == ("ev_txn_4", "payment_succeeded")
    assert reader.carried_attribution(verified.payload) is True
