"""The bare-write baselines of `make bench` (tracking/bench_views.py) write the rows a click and a commissioned sale
write, so the ratios compare like with like."""

import json
from decimal import Decimal

import pytest
from django.db.models import Q
from django.test import RequestFactory

from commissions.models import Commission, LedgerEntry
from programs.models import PartnerProgram, ReferralLink
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.tracking.sales import post_sale, sale_body
from tracking.bench_views import bare_click, bare_sale
from tracking.models import ClickEvent, Customer, SaleEvent
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


def post(view, body: dict):
    request = RequestFactory().post("/", json.dumps(body), content_type="application/json")
    response = view(request)
    assert response.status_code == 200
    return json.loads(response.content)


def test_bare_click_writes_a_customer_its_click_and_the_link_counter():
    link = ReferralLinkFactory()
    answer = post(bare_click, {"affiliate_url": f"https://shop.example.com/?aff={link.short_link}", "page_url": "p"})
    customer = Customer.objects.get()
    event = ClickEvent.objects.get()
    assert answer["click_id"] == customer.click_id == event.click_id and event.customer_id == customer.pk
    assert (event.link_id, event.partner_id, event.page_url) == (link.pk, link.partner_id, "p")
    assert ReferralLink.objects.get().clicks == 1


def test_bare_sale_writes_the_sale_its_credited_commission_and_the_metrics():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("10"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link)
    answer = post(bare_sale, {"transaction_id": "t1", "amount_cents": 4900, "click_id": customer.click_id})
    sale = SaleEvent.objects.get()
    commission = Commission.objects.get()
    entry = LedgerEntry.objects.get()
    assert (answer["sale_id"], answer["commission_id"]) == (sale.pk, commission.pk)
    assert (sale.processor_event_id, sale.customer_id, sale.partner_id) == ("t1", customer.pk, link.partner_id)
    assert (commission.amount_cents, commission.status, commission.credited) == (490, "approved", True)
    assert (entry.kind, entry.amount_cents, entry.memo) == ("credit", 490, f"Commission #{commission.pk} approved")
    metrics = PartnerProgram.objects.get(partner=link.partner, program=program)
    assert (metrics.sales, metrics.revenue_cents) == (1, 4900)


def test_bare_sale_writes_the_webhook_events_a_commissioned_sale_writes(api_client):
    """The same events, about the same rows, with payloads of the same shape (the real path's values are
    tests/webhooks' business; here only that the baseline writes as much)."""
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("10"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    CustomerFactory(link=link, customer_key="user_1")
    bare_buyer = CustomerFactory(link=link)

    def written(sale_id: int, commission_id: int) -> list[tuple]:
        events = WebhookEvent.objects.filter(
            Q(type__startswith="sale.", object_id=sale_id) | Q(type__startswith="commission.", object_id=commission_id)
        ).order_by("pk")
        return [(e.type, e.livemode, sorted(e.data), e.program_id) for e in events]

    real = post_sale(api_client, program, **sale_body(amount_cents=4900)).json()
    bare = post(bare_sale, {"transaction_id": "t1", "amount_cents": 4900, "click_id": bare_buyer.click_id})
    assert WebhookEvent.objects.count() == 6
    assert written(bare["sale_id"], bare["commission_id"]) == written(real["sale_id"], real["commission_id"])
    assert [t for t, *_ in written(bare["sale_id"], bare["commission_id"])] == [
        "sale.created",
        "commission.created",
        "commission.approved",
    ]
