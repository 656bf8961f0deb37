"""GET /api/agent/v1/events: the clicks, leads or sales of the programs a key may see, newest first by id, with
filters and cursor pagination. Live events only unless ?test=true. A page is one query whatever its depth."""

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.urls import path
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.api.fields import spec_messages
from core.api.query import Instant, InstantField, QueryIntegerField, TimeBounds, iso
from core.ids import MAX_BIGINT
from fraud.rules import Traffic
from tracking.models import ClickEvent, LeadEvent, SaleEvent
from tracking.services.tracker import UTM_FIELDS, utm_params_of

from .. import messages
from ..selectors import agent_program_get, agent_programs
from . import serializers as s
from .base import AgentApi, query_of
from .pagination import PageQuerySerializer, page_of

EVENT_TYPES = ("click", "lead", "sale")


def _id_field(invalid: str, help_text: str) -> QueryIntegerField:
    return QueryIntegerField(
        min_value=1, max_value=MAX_BIGINT, invalid=invalid, too_big=invalid, required=False, help_text=help_text
    )


class EventsQuerySerializer(PageQuerySerializer):
    type = serializers.ChoiceField(
        choices=EVENT_TYPES,
        error_messages=spec_messages(messages.EVENT_TYPE_INVALID),
        help_text="Which events: click, lead or sale",
    )
    program_id = _id_field(
        messages.EVENT_PROGRAM_ID_INVALID, "Only this program's events (404 if the key may not see it)"
    )
    partner_id = _id_field(messages.EVENT_PARTNER_ID_INVALID, "Only the events attributed to this partner")
    since = InstantField(
        message=messages.EVENT_SINCE_INVALID,
        required=False,
        help_text="Events at or after this time (a date: from its start, UTC); the event's own time",
    )
    until = InstantField(
        message=messages.EVENT_UNTIL_INVALID,
        required=False,
        help_text="Events at or before this time (a date: through its end, UTC); the event's own time",
    )
    test = serializers.ChoiceField(
        choices=("true", "false"),
        required=False,
        error_messages=spec_messages(messages.EVENT_TEST_INVALID),
        help_text="true: test-mode events only; false (default): live events only",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The same bounds as the dashboard's events list: a date as `until` covers its whole day.
        since: Instant | None = attrs.get("since")
        until: Instant | None = attrs.get("until")
        bounds = TimeBounds(start=since.value if since else None)
        if until is not None:
            bounds = TimeBounds(
                start=bounds.start,
                end=until.value + timedelta(days=1) if until.is_date else until.value,
                end_exclusive=until.is_date,
            )
        if bounds.start is not None and bounds.end is not None:
            if bounds.start >= bounds.end if bounds.end_exclusive else bounds.start > bounds.end:
                raise serializers.ValidationError(messages.EVENT_RANGE_INVALID)
        attrs["bounds"] = bounds
        attrs["is_test"] = attrs.get("test") == "true"
        return attrs


def _click_item(click: ClickEvent) -> dict[str, Any]:
    return {
        "id": click.pk,
        "type": "click",
        "program_id": click.program_id,
        "partner_id": click.partner_id,
        "link": click.link.short_link if click.link else None,
        "click_id": click.click_id,
        "timestamp": iso(click.click_timestamp),
        "page_url": click.page_url,
        "referrer_url": click.referrer_url,
        **utm_params_of(click.page_url),
        "geo_country": click.geo_country,
        "device_type": click.device_type,
        "traffic": click.traffic,
        "flags": list(click.flags),
        "is_test": click.is_test,
        "created_at": iso(click.created_at),
    }


def _lead_item(lead: LeadEvent) -> dict[str, Any]:
    return {
        "id": lead.pk,
        "type": "lead",
        "program_id": lead.program_id,
        "partner_id": lead.partner_id,
        "click_id": lead.click_id,
        "customer_key": lead.customer_key,
        "email": lead.email,
        "timestamp": iso(lead.lead_timestamp),
        "provisional": lead.provisional,
        "settled_at": iso(lead.settled_at),
        "is_test": lead.is_test,
        "created_at": iso(lead.created_at),
    }


def _sale_item(sale: SaleEvent) -> dict[str, Any]:
    # The reverse one-to-one raises when the sale has none; select_related has already read it (or its absence).
    commission = getattr(sale, "commission", None)
    return {
        "id": sale.pk,
        "type": "sale",
        "program_id": sale.program_id,
        "partner_id": sale.partner_id,
        "click_id": sale.click_id,
        "transaction_id": sale.processor_event_id,
        "amount_cents": sale.amount_cents,
        "currency": sale.currency,
        "sale_type": sale.sale_type,
        "payment_status": sale.payment_status,
        "is_recurring": sale.is_recurring,
        "attributed": sale.attributed,
        "refunded_cents": commission.sale_refunded_cents if commission else None,
        "timestamp": iso(sale.sale_date),
        "commission": {"id": commission.pk, "status": commission.status} if commission else None,
        "is_test": sale.is_test,
        "created_at": iso(sale.created_at),
    }


# Per type: the rows (with what the items read joined in, so a page is one query), the time field, the builder.
_SOURCES: dict[str, tuple[Callable[[], QuerySet[Any]], str, Callable[[Any], dict[str, Any]]]] = {
    "click": (lambda: ClickEvent.objects.select_related("link"), "click_timestamp", _click_item),
    "lead": (lambda: LeadEvent.objects.all(), "lead_timestamp", _lead_item),
    "sale": (lambda: SaleEvent.objects.select_related("commission"), "sale_date", _sale_item),
}

_COMMON: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "program_id": serializers.IntegerField(),
    "partner_id": serializers.IntegerField(allow_null=True, help_text="The attributed partner; null if none"),
    "click_id": serializers.CharField(),
    "timestamp": serializers.DateTimeField(help_text="The event's own time (what since/until filter on)"),
    "is_test": serializers.BooleanField(),
    "created_at": serializers.DateTimeField(help_text="When the service recorded it"),
}
CLICK = inline_serializer(
    "AgentClickEvent",
    fields={
        **_COMMON,
        "type": serializers.ChoiceField(choices=["click"]),
        "link": serializers.CharField(allow_null=True, help_text="The referral link's short code"),
        "page_url": serializers.CharField(help_text="The landing page"),
        "referrer_url": serializers.CharField(),
        **{name: serializers.CharField(help_text="Read from page_url; empty if absent") for name in UTM_FIELDS},
        "geo_country": serializers.CharField(help_text="ISO 3166 alpha-2; empty if unknown"),
        "device_type": serializers.CharField(),
        "traffic": serializers.ChoiceField(
            choices=Traffic.choices,
            help_text="empty: counted; duplicate, bot or prefetch: recorded by the fraud rules, not counted",
        ),
        "flags": serializers.ListField(
            child=serializers.CharField(), help_text='The click rules that flagged it (["paid_ads"]); empty if none'
        ),
    },
)
LEAD = inline_serializer(
    "AgentLeadEvent",
    fields={
        **_COMMON,
        "type": serializers.ChoiceField(choices=["lead"]),
        "customer_key": serializers.CharField(),
        "email": serializers.CharField(help_text="As the lead call sent it; may be empty"),
        "provisional": serializers.BooleanField(help_text="A browser lead still waiting for the server's confirmation"),
        "settled_at": serializers.DateTimeField(allow_null=True),
    },
)
SALE = inline_serializer(
    "AgentSaleEvent",
    fields={
        **_COMMON,
        "type": serializers.ChoiceField(choices=["sale"]),
        "click_id": serializers.CharField(help_text="Empty when the sale came without one"),
        "transaction_id": serializers.CharField(allow_null=True, help_text="The caller's transaction id"),
        "amount_cents": serializers.IntegerField(),
        "currency": serializers.CharField(),
        "sale_type": serializers.ChoiceField(choices=["payment", "subscription"]),
        "payment_status": serializers.CharField(),
        "is_recurring": serializers.BooleanField(),
        "attributed": serializers.BooleanField(help_text="Whether the sale was credited to a partner"),
        "refunded_cents": serializers.IntegerField(
            allow_null=True, help_text="Refunded so far (recorded on its commission); null without a commission"
        ),
        "commission": inline_serializer(
            "AgentSaleCommission",
            fields={"id": serializers.IntegerField(), "status": serializers.CharField()},
            allow_null=True,
        ),
    },
)
EVENTS_OK = inline_serializer(
    "AgentEventList",
    fields={
        "data": PolymorphicProxySerializer(
            component_name="AgentEvent",
            serializers={"click": CLICK, "lead": LEAD, "sale": SALE},
            resource_type_field_name="type",
            many=True,
        ),
        "next_cursor": serializers.CharField(
            allow_null=True, help_text="Pass as ?cursor= for the next page; null on the last"
        ),
    },
)


class AgentEventsListApi(AgentApi):
    required_scopes = {"GET": "events:read"}

    @extend_schema(
        summary="Clicks, leads or sales of the programs this key may see, newest first",
        parameters=[EventsQuerySerializer],
        responses={200: EVENTS_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        query = query_of(EventsQuerySerializer, request)
        rows, time_field, build = _SOURCES[query["type"]]
        if "program_id" in query:
            programs = Q(program=agent_program_get(self.agent_key, query["program_id"]))
        else:
            programs = Q(program__in=agent_programs(self.agent_key))
        events = rows().filter(programs & Q(is_test=query["is_test"]) & query["bounds"].q(time_field))
        if "partner_id" in query:
            events = events.filter(partner_id=query["partner_id"])
        page, next_cursor = page_of(events, query=query)
        return Response({"data": [build(event) for event in page], "next_cursor": next_cursor})


urlpatterns = [path("api/agent/v1/events", AgentEventsListApi.as_view(), name="agent-events")]
