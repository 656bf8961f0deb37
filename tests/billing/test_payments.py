"""tracking.payments as every billing platform's reader calls it: the sale service with the platform as provider,
the spec's 409 rule shared with the API, renewals by the platform's customer id, refunds once by id and by total,
and explain naming the billing path."""

import pytest

from commissions.models import Commission
from insight.explain import sale_explain
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tracking.models import SaleEvent
from tracking.payment_attribution import PaymentParties
from tracking.payments import (
    Payment,
    payment_record,
    payment_refund_record,
    payment_refunded_total_record,
)

pytestmark = pytest.mark.django_db


def _payment(transaction_id: str, *, metadata=None, customer_id="ctm_1", amount=10000, currency="usd") -> Payment:
    return Payment(
        transaction_id=transaction_id,
        amount=amount,
        currency=currency,
        parties=PaymentParties(
            metadata=metadata or {}, email="", processor_customer_id=customer_id, client_reference_id=""
        ),
        sale_type="subscription",
        subscription_id="sub_1",
    )


@pytest.fixture
def program():
    return ProgramFactory(hold_days=0, commission_rate=20)


def test_a_checkout_with_the_click_id_credits_the_partner_and_renewals_follow_the_customer_id(program):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    first = payment_record(
        program, _payment("txn_1", metadata={"svc_click_id": customer.click_id}), provider="paddle", livemode=True
    )
    assert first.sale is not None and "attributed by svc_click_id" in first.text
    renewal = payment_record(program, _payment("txn_2"), provider="paddle", livemode=True)
    assert renewal.sale is not None and "attributed by processor_customer_id" in renewal.text
    sales = SaleEvent.objects.order_by("pk")
    assert [(s.provider, s.provider_payment_id, s.attributed_by) for s in sales] == [
        ("paddle", "txn_1", "paddle:svc_click_id"),
        ("paddle", "txn_2", "paddle:processor_customer_id"),
    ]
    assert sorted(Commission.objects.values_list("amount_cents", flat=True)) == [2000, 2000]
    explained = sale_explain(program=program, transaction_id="txn_2")
    assert explained["attribution"]["path"] == "billing"
    matched = [r["rule"] for r in explained["attribution"]["rules"] if r["status"] == "matched"]
    assert matched == ["processor_customer_id"]


def test_the_same_payment_twice_is_one_sale(program):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    payment = _payment("txn_1", metadata={"svc_click_id": customer.click_id})
    payment_record(program, payment, provider="polar", livemode=True)
    again = payment_record(program, payment, provider="polar", livemode=True)
    assert again.text.startswith("already recorded as sale #")
    assert SaleEvent.objects.count() == 1 and Commission.objects.count() == 1


def test_an_unsupported_currency_or_a_test_payment_creates_no_commission(program):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    metadata = {"svc_click_id": customer.click_id}
    refused = payment_record(
        program, _payment("txn_x", metadata=metadata, currency="xyz"), provider="dodo", livemode=True
    )
    assert (refused.status, refused.text) == ("ignored", "currency XYZ is not supported")
    test = payment_record(program, _payment("txn_t", metadata=metadata), provider="dodo", livemode=False)
    assert test.text == "test payment recorded (no commission)"
    assert SaleEvent.objects.get().is_test and not Commission.objects.exists()


def test_refunds_by_id_apply_once_and_a_full_refund_reverses(program):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    payment_record(
        program, _payment("txn_1", metadata={"svc_click_id": customer.click_id}), provider="paddle", livemode=True
    )
    common = {"provider": "paddle", "livemode": True}
    payment_refund_record(program, "txn_1", refund_id="adj_1", amount=2500, **common)
    payment_refund_record(program, "txn_1", refund_id="adj_1", amount=2500, **common)
    commission = Commission.objects.get()
    assert (commission.amount_cents - commission.deducted_cents, commission.sale_refunded_cents) == (1500, 2500)
    payment_refund_record(program, "txn_1", refund_id="adj_2", amount=7500, **common)
    commission.refresh_from_db()
    assert (commission.status, commission.sale_refunded_cents) == ("reversed", 10000)
    assert payment_refund_record(program, "txn_nope", refund_id="adj_3", amount=1, **common).text == (
        "no recorded sale for this payment"
    )


def test_a_refunded_total_applies_what_it_adds_once(program):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    payment_record(
        program,
        _payment("order_1", metadata={"svc_click_id": customer.click_id}),
        provider="lemonsqueezy",
        livemode=True,
    )
    common = {"provider": "lemonsqueezy", "livemode": True}
    payment_refunded_total_record(program, "order_1", refunded_total=4000, **common)
    assert (
        payment_refunded_total_record(program, "order_1", refunded_total=4000, **common).text
        == "refund already applied"
    )
    payment_refunded_total_record(program, "order_1", refunded_total=10000, **common)
    commission = Commission.objects.get()
    assert (commission.status, commission.sale_refunded_cents) == ("reversed", 10000)


def test_a_refund_in_the_platform_reverses_the_integrators_own_api_sale_of_that_payment(program, api_client):
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))
    sent = api_client.post(
        "/api/v1/track/sale",
        {
            "transaction_id": "my-order-7",
            "customer_key": customer.customer_key or "",
            "click_id": customer.click_id,
            "amount_cents": 10000,
            "currency": "USD",
            "provider": "paddle",
            "provider_payment_id": "txn_7",
        },
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}",
    )
    assert sent.status_code == 200, sent.content
    payment_refund_record(program, "txn_7", provider="paddle", livemode=True, refund_id="adj_7", amount=None)
    assert Commission.objects.get().status == "reversed"
