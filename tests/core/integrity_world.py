"""A small but complete world of money for the integrity tests, made through the real services: sales and refunds
through the tracking API, commissions approved at once or held, a void, a renewal that pays nothing, a test-mode
sale, and a payout run whose payouts are paid, failed, and reduced by a refund before they were sent."""

from dataclasses import dataclass, field
from decimal import Decimal
from itertools import count
from typing import Any

from rest_framework.test import APIClient

from commissions.models import Commission
from commissions.services import commission_void
from payouts.ledger import payout_mark_failed, payout_mark_paid
from payouts.models import Payout, PayoutStatus
from payouts.services import run_confirm, run_preview
from programs.models import Partner
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.payouts.money import payable_partner
from tracking.models import SaleEvent

SALE_URL = "/api/v1/track/sale"
REFUND_URL = "/api/v1/track/refund"
_numbers = count(1)


@dataclass
class World:
    instant: Any  # hold 0: commissions approved and credited at once
    held: Any  # hold 30 days: commissions pending
    partners: dict[str, Partner]
    sales: dict[str, SaleEvent] = field(default_factory=dict)
    payouts: dict[str, Payout] = field(default_factory=dict)

    def commission(self, name: str) -> Commission:
        return Commission.objects.get(sale=self.sales[name])


def sale(client: APIClient, program: Any, partner: Partner, *, amount: int, key: str = "", **body) -> SaleEvent:
    """A sale through POST /api/v1/track/sale by a customer the partner's link brought."""
    number = next(_numbers)
    link = ReferralLinkFactory(program=program, partner=partner)
    customer: Any = CustomerFactory(link=link, customer_key=f"world_{number}", customer_status="lead")
    transaction_id = f"world_txn_{number}"
    payload = {"transaction_id": transaction_id, "amount_cents": amount, "customer_key": customer.customer_key, **body}
    response = client.post(SALE_URL, payload, format="json", HTTP_AUTHORIZATION=f"Bearer {key or program.raw_api_key}")
    assert response.status_code in (200, 201), response.content
    return SaleEvent.objects.get(processor_event_id=transaction_id, is_test=bool(key))


def refund(client: APIClient, program: Any, sale: SaleEvent, amount: int | None = None, refund_id: str = "") -> None:
    body: dict[str, object] = {"transaction_id": sale.processor_event_id}
    if amount:
        body |= {"refund_amount_cents": amount, "refund_id": refund_id or f"re_{next(_numbers)}"}
    response = client.post(REFUND_URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
    assert response.status_code == 200, response.content


def world_build() -> World:
    client = APIClient()
    instant: Any = ProgramFactory(hold_days=0, commission_type="percent", commission_rate=Decimal("20"))
    held: Any = ProgramFactory(hold_days=30, commission_type="percent", commission_rate=Decimal("20"))
    partners = {name: payable_partner(instant, name=name) for name in ("paid", "failed", "reduced")}
    partners["held"] = payable_partner(held, name="held")
    w = World(instant=instant, held=held, partners=partners)

    for name, sales in (("paid", 3), ("failed", 2), ("reduced", 2)):
        for n in range(sales):
            w.sales[f"{name}{n}"] = sale(client, instant, partners[name], amount=10_000 + n * 1_000)
    # A renewal on a percent program pays nothing, and says why on the sale.
    w.sales["renewal"] = sale(client, instant, partners["paid"], amount=5_000, is_recurring=True)
    w.sales["test"] = sale(client, instant, partners["paid"], amount=7_000, key=instant.raw_test_api_key)
    w.sales["held0"] = sale(client, held, partners["held"], amount=20_000)
    w.sales["held1"] = sale(client, held, partners["held"], amount=30_000)
    w.sales["voided"] = sale(client, held, partners["held"], amount=40_000)

    refund(client, instant, w.sales["paid1"], amount=5_000)  # half: 1,100 of 2,200 taken back
    refund(client, held, w.sales["held1"], amount=10_000)  # pending, partly refunded: cancelled whole
    commission_void(commission_id=w.commission("voided").pk, reason="test order", actor="user:owner")

    run = run_preview(program=instant, currency="USD", actor="user:owner")
    for payout in run_confirm(run_id=run.pk, actor="user:owner"):
        w.payouts[payout.partner.name] = payout
    assert payout_mark_paid(payout_id=w.payouts["paid"].pk, actor="user:owner", reference="PP-1")
    assert payout_mark_failed(payout_id=w.payouts["failed"].pk, code="account_closed", message="closed")
    # Refunded whole before its payout was sent: the pending payout is reduced by the clawback.
    refund(client, instant, w.sales["reduced1"])
    # After the payout: the paid commission is refunded, the balance goes negative.
    refund(client, instant, w.sales["paid0"], amount=2_500)
    for payout in w.payouts.values():
        payout.refresh_from_db()
    assert w.payouts["reduced"].status == PayoutStatus.PENDING
    assert w.payouts["reduced"].amount_cents < 4_200
    return w
