"""The bare-write baselines of `make bench`, routed only when BENCH_TRIVIAL_ENDPOINT is on (config/urls.py).

Plain Django views (no DRF, no key, no rate limit, no validation) that write with the ORM, in one transaction,
the rows a real call writes: what the tracking API costs on top of its writes is the ratio of the two.
- POST /bench/bare-click, the click's body: what a new visitor's click writes, a customer (its visitor hash,
  computed as fraud does from the client address and user agent, and its click flags) and its click event with
  the same columns filled (geo and device as constant strings of realistic length, no parsing), "2 INSERT". No
  link counter UPDATE: the real click leaves the counters to the rollups.
- POST /bench/bare-lead, the lead's body (click_id of a customer at `click`, customer_key, session_id,
  page_url): what a server-mode lead writes, the customer's move to `lead` with its customer_key (a conditional
  UPDATE), the lead event, its lead.created webhook event and the partner-program leads UPDATE.
- POST /bench/bare-sale, the sale's body (transaction_id, amount_cents, click_id of a customer on a percent
  program without a hold): the sale, its approved commission, the commission's ledger credit, the webhook events
  announcing them (sale.created, commission.created, commission.approved, with their payloads), the rows a
  commissioned repeat sale writes. No partner-program UPDATE: the real sale leaves its counters to the rollups.
A link, and a sale's buyer (the sale mix cycles through a few), are read once per process and kept, as the real
paths keep links; a lead's customer is read on every call, as the real lead reads it (each lead has its own)."""

import json
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from commissions.calculations import commission_amount
from commissions.models import Commission, CommissionStatus, LedgerEntry
from core.clientip import client_ip
from fraud.rules import Traffic, visitor_hash
from programs.models import PartnerProgram, ReferralLink
from webhooks.events import event_id_generate
from webhooks.models import EventType, WebhookEvent
from webhooks.payloads import commission_data, lead_data, sale_data

from .models import ClickEvent, Customer, CustomerStatus, LeadEvent, SaleEvent
from .services.common import new_click_id

# What the real click stores from the geo database and the user-agent parser, as constants of the same length.
_GEO = {"geo_country": "DE", "geo_region": "North Rhine-Westphalia", "geo_city": "Düsseldorf"}
_DEVICE = {"device_type": "desktop", "device_os": "Windows", "browser_name": "Chrome"}


@dataclass(frozen=True)
class _Link:
    pk: int
    partner_id: int
    program_id: int


@dataclass(frozen=True)
class _Buyer:
    customer_id: int
    click_id: str
    partner_id: int
    program_id: int
    commission_type: str
    commission_rate: Decimal


_links: dict[str, _Link] = {}
_buyers: dict[str, _Buyer] = {}


def _link(code: str) -> _Link:
    if code not in _links:
        link = ReferralLink.objects.get(short_link=code)
        assert link.partner_id is not None and link.program_id is not None  # the demo's links are configured
        _links[code] = _Link(pk=link.pk, partner_id=link.partner_id, program_id=link.program_id)
    return _links[code]


def _buyer_read(click_id: str) -> _Buyer:
    customer = Customer.objects.select_related("program").get(click_id=click_id)
    assert customer.first_partner_id is not None
    return _Buyer(
        customer_id=customer.pk,
        click_id=customer.click_id,
        partner_id=customer.first_partner_id,
        program_id=customer.program_id,
        commission_type=customer.program.commission_type,
        commission_rate=customer.program.commission_rate,
    )


def _buyer(click_id: str) -> _Buyer:
    """A repeat buyer, kept: the sale mix cycles through a pool of customers."""
    if click_id not in _buyers:
        _buyers[click_id] = _buyer_read(click_id)
    return _buyers[click_id]


@csrf_exempt
@require_POST
def bare_click(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    link = _link(parse_qs(urlsplit(body["affiliate_url"]).query)["aff"][0])
    user_agent = body.get("user_agent") or request.META.get("HTTP_USER_AGENT", "")
    visitor = visitor_hash(ip=client_ip(request), user_agent=user_agent)
    now = timezone.now()
    with transaction.atomic():
        customer = Customer.objects.create(
            program_id=link.program_id,
            click_id=new_click_id(link.program_id),
            first_partner_id=link.partner_id,
            first_link_id=link.pk,
            first_clicked_at=now,
            last_clicked_at=now,
            visitor_hash=visitor,
            click_flags=[],
            created_at=now,
        )
        ClickEvent.objects.create(
            program_id=link.program_id,
            partner_id=link.partner_id,
            link_id=link.pk,
            customer=customer,
            click_id=customer.click_id,
            session_id=body.get("session_id", ""),
            page_url=body.get("page_url", ""),
            page_title=body.get("page_title", ""),
            referrer_url=body.get("referrer_url", ""),
            user_agent=user_agent,
            screen_resolution=body.get("screen_resolution", ""),
            viewport_size=body.get("viewport_size", ""),
            language=body.get("language", ""),
            timezone=body.get("timezone", ""),
            **_GEO,
            **_DEVICE,
            traffic=Traffic.HUMAN,
            flags=[],
            visitor_hash=visitor,
            click_timestamp=now,
            created_at=now,
        )
    return JsonResponse({"success": True, "click_id": customer.click_id})


@csrf_exempt
@require_POST
def bare_lead(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    # Read every time, as the real lead does: each lead is on a customer of its own.
    buyer = _buyer_read(body["click_id"])
    customer_key = body.get("customer_key", "")
    now = timezone.now()
    with transaction.atomic():
        moved = Customer.objects.filter(pk=buyer.customer_id, customer_status=CustomerStatus.CLICK).update(
            customer_status=CustomerStatus.LEAD, customer_key=customer_key
        )
        if not moved:
            return JsonResponse({"success": False, "message": "customer is past click"}, status=400)
        lead = LeadEvent.objects.create(
            program_id=buyer.program_id,
            customer_id=buyer.customer_id,
            partner_id=buyer.partner_id,
            click_id=buyer.click_id,
            customer_key=customer_key,
            session_id=body.get("session_id", ""),
            page_url=body.get("page_url", ""),
            server_mode=True,
            settled_at=now,
            lead_timestamp=now,
            created_at=now,
        )
        WebhookEvent.objects.create(
            public_id=event_id_generate(),
            program_id=buyer.program_id,
            type=EventType.LEAD_CREATED,
            livemode=True,
            object_id=lead.pk,
            data=lead_data(lead),
            created_at=now,
        )
        PartnerProgram.objects.filter(partner_id=buyer.partner_id, program_id=buyer.program_id).update(
            leads=F("leads") + 1
        )
    return JsonResponse({"success": True, "lead_id": lead.pk, "click_id": buyer.click_id})


@csrf_exempt
@require_POST
def bare_sale(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    buyer = _buyer(body["click_id"])
    amount = int(body["amount_cents"])
    now = timezone.now()
    with transaction.atomic():
        sale = SaleEvent.objects.create(
            program_id=buyer.program_id,
            customer_id=buyer.customer_id,
            partner_id=buyer.partner_id,
            click_id=buyer.click_id,
            processor_event_id=body["transaction_id"],
            amount_cents=amount,
            attributed_by="click_id",
            sale_date=now,
            created_at=now,
        )
        commission = Commission.objects.create(
            program_id=buyer.program_id,
            partner_id=buyer.partner_id,
            sale=sale,
            customer_id=buyer.customer_id,
            amount_cents=commission_amount(
                sale_amount=amount, commission_type=buyer.commission_type, rate=buyer.commission_rate
            ),
            status=CommissionStatus.APPROVED,
            credited=True,
            approved_at=now,
            hold_until=now,
            created_at=now,
        )
        LedgerEntry.objects.create(
            partner_id=buyer.partner_id,
            program_id=buyer.program_id,
            commission=commission,
            kind=LedgerEntry.Kind.CREDIT,
            amount_cents=commission.amount_cents,
            memo=f"Commission #{commission.pk} approved",
        )
        WebhookEvent.objects.bulk_create(
            [
                WebhookEvent(
                    public_id=event_id_generate(),
                    program_id=buyer.program_id,
                    type=event_type,
                    livemode=True,
                    object_id=object_id,
                    data=data,
                    created_at=now,
                )
                for event_type, object_id, data in (
                    (EventType.SALE_CREATED, sale.pk, sale_data(sale)),
                    (EventType.COMMISSION_CREATED, commission.pk, commission_data(commission)),
                    (EventType.COMMISSION_APPROVED, commission.pk, commission_data(commission)),
                )
            ]
        )
    return JsonResponse({"success": True, "sale_id": sale.pk, "commission_id": commission.pk})
