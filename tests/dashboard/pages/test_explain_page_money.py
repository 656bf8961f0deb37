"""The explain page shows money as the other pages do ("9.80 USD", "5,000 VND"), never minor units beside a
currency, and says what the commission still pays in its state."""

import pytest

from commissions.approval import commission_approve
from commissions.services import refund_apply
from tests.factories import CommissionFactory, CustomerFactory, ReferralLinkFactory, SaleFactory

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/explain"


@pytest.fixture
def customer(program):
    return CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")


def test_a_pending_commission_partly_refunded_still_pays_nothing(member_client, program, customer):
    sale = SaleFactory(customer=customer, processor_event_id="txn_1", attributed_by="customer_key", amount_cents=9800)
    commission = CommissionFactory(sale=sale)
    refund_apply(sale=sale, amount=4900, refund_id="re_1", reason="")

    body = member_client.get(url(program), {"transaction_id": "txn_1"}).content.decode()

    assert "<dt>Amount</dt><dd>98.00 USD</dd>" in body
    assert "<code>20% of 98.00 USD = 19.60 USD</code>" in body
    assert "<p>19.60 USD, status" in body
    assert (
        '<p id="explain-payable"><strong>It still pays 0.00 USD: a refund cancels a pending commission whole.'
        "</strong></p>"
    ) in body
    assert f"commission #{commission.pk} of 19.60 USD is refunded; it still pays 0.00 USD" in body
    assert "49.00 USD of 98.00 USD refunded" in body
    assert "9800 USD" not in body and "1960 USD" not in body and "(smallest unit)" not in body


def test_a_vnd_commission_and_its_ledger_have_no_decimals(member_client, program, customer):
    sale = SaleFactory(customer=customer, processor_event_id="txn_v", currency="VND", amount_cents=250000)
    commission = CommissionFactory(sale=sale)
    assert commission_approve(commission_id=commission.pk)

    body = member_client.get(url(program), {"transaction_id": "txn_v"}).content.decode()

    assert "<dd>250,000 VND</dd>" in body
    assert 'data-label="Amount">50,000 VND</td><td class="num" data-label="Running total">50,000 VND</td>' in body
    assert '<p id="explain-ledger-total">Total: 50,000 VND</p>' in body
    assert "It still pays 50,000 VND: credited." in body

    page = member_client.get(url(program), {"customer_key": "user_1"}).content.decode()
    assert "250,000 VND on" in page and f"commission #{commission.pk} 50,000 VND (approved" in page
