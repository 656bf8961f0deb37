"""The bare-write baselines of `make bench` (tracking/bench_views.py) write the rows a new visitor's click, a
server-mode lead and a commissioned sale write, so the ratios compare like with like."""

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model, Q
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from commissions.models import Commission, LedgerEntry
from fraud.rules import visitor_hash
from programs.models import PartnerProgram, ReferralLink
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer
from tests.tracking.sales import post_sale, sale_body
from tracking import bench_views
from tracking.bench_views import bare_click, bare_lead, bare_sale
from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

GB_IP = "81.2.69.160"  # in the bundled GeoLite2: the real click fills its geo columns
CHROME_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    """The views keep links and buyers per process; each test's database has its own."""
    bench_views._links.clear()
    bench_views._buyers.clear()
    yield
    bench_views._links.clear()
    bench_views._buyers.clear()


def post(view, body: dict[str, Any], **meta: Any):
    request = RequestFactory().post("/", json.dumps(body), content_type="application/json", **meta)
    response = view(request)
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def filled(row: Model) -> set[str]:
    """The columns the row holds a value in (ids and times always are)."""
    return {f.attname for f in row._meta.concrete_fields if getattr(row, f.attname) not in ("", None, [], {})}


def click_body(link: ReferralLink, session_id: str) -> dict[str, Any]:
    return {
        "affiliate_url": f"https://shop.example.com/?aff={link.short_link}",
        "page_url": "https://shop.example.com/pricing",
        "referrer_url": "https://news.example.org/post",
        "user_agent": CHROME_UA,
        "session_id": session_id,
    }


def test_bare_click_writes_what_a_new_visitors_click_writes(api_client, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    link = ReferralLinkFactory()
    real = api_client.post("/api/v1/track/click", click_body(link, "real"), format="json", HTTP_X_FORWARDED_FOR=GB_IP)
    assert real.status_code == 200
    bare = post(bare_click, click_body(link, "bare"), HTTP_X_FORWARDED_FOR=GB_IP)

    real_event, bare_event = ClickEvent.objects.get(session_id="real"), ClickEvent.objects.get(session_id="bare")
    assert bare["click_id"] == bare_event.click_id == bare_event.customer.click_id
    assert filled(bare_event) == filled(real_event)
    assert filled(bare_event.customer) == filled(real_event.customer)
    # The same visitor hashes the same: the bare view computes it as fraud does.
    assert bare_event.visitor_hash == real_event.visitor_hash == visitor_hash(ip=GB_IP, user_agent=CHROME_UA)
    assert bare_event.customer.visitor_hash == real_event.customer.visitor_hash
    assert (bare_event.traffic, bare_event.flags, bare_event.customer.click_flags) == ("", [], [])
    assert (bare_event.link_id, bare_event.partner_id, bare_event.customer_id) == (
        link.pk,
        link.partner_id,
        Customer.objects.get(click_id=bare["click_id"]).pk,
    )
    assert len(bare_event.geo_region) > 2 and len(bare_event.device_type) > 2  # realistic, not empty


def test_bare_click_makes_two_inserts_and_no_counter_update():
    link = ReferralLinkFactory()
    post(bare_click, click_body(link, "warm"))  # reads the link once, as the real click's cache does
    with CaptureQueriesContext(connection) as queries:
        post(bare_click, click_body(link, "measured"))
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert statements.count("INSERT") == 2
    assert "UPDATE" not in statements and "SELECT" not in statements
    assert ReferralLink.objects.get().clicks == 0
    assert Customer.objects.count() == 2


def test_bare_lead_writes_what_a_server_mode_lead_writes(api_client):
    link = ReferralLinkFactory()
    real_customer, bare_customer = CustomerFactory(link=link), CustomerFactory(link=link)
    body = {"customer_key": "user-1", "session_id": "s1", "page_url": "https://shop.example.com/signup"}
    real = api_client.post(
        "/api/v1/track/lead",
        {**body, "click_id": real_customer.click_id},
        format="json",
        **bearer(link.program.raw_api_key),
    )
    assert real.status_code == 200, real.content
    bare = post(bare_lead, {**body, "customer_key": "user-2", "click_id": bare_customer.click_id})

    real_lead, bare_lead_row = LeadEvent.objects.get(customer=real_customer), LeadEvent.objects.get(pk=bare["lead_id"])
    assert filled(bare_lead_row) == filled(real_lead)
    assert (bare_lead_row.customer_id, bare_lead_row.customer_key, bare_lead_row.server_mode) == (
        bare_customer.pk,
        "user-2",
        True,
    )
    for customer, key in ((real_customer, "user-1"), (bare_customer, "user-2")):
        customer.refresh_from_db()
        assert (customer.customer_status, customer.customer_key) == ("lead", key)

    def announced(lead: LeadEvent) -> tuple:
        event = WebhookEvent.objects.get(type="lead.created", object_id=lead.pk)
        return event.livemode, sorted(event.data), event.program_id

    assert announced(bare_lead_row) == announced(real_lead)
    assert PartnerProgram.objects.get(partner=link.partner, program=link.program).leads == 2


def test_bare_lead_refuses_a_customer_past_click():
    customer = CustomerFactory(customer_status="lead")
    request = RequestFactory().post(
        "/", json.dumps({"click_id": customer.click_id, "customer_key": "k"}), content_type="application/json"
    )
    assert bare_lead(request).status_code == 400
    assert not LeadEvent.objects.exists()


def test_bare_sale_writes_the_sale_and_its_credited_commission_and_no_counter():
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
    # As the real sale: the partner-program counters are the rollup run's to add.
    metrics = PartnerProgram.objects.get(partner=link.partner, program=program)
    assert (metrics.sales, metrics.revenue_cents) == (0, 0)


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
