"""Query strings of tracking's read routes, wherever they are served (the dashboard API, the program-key reports,
the CLI and agent APIs). Checked strictly ("2.0" is not a page number) and every failure names the parameter; an
empty parameter (`?eventType=`) counts as absent, as dashboard filter forms send."""

from datetime import date, timedelta
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core.api.fields import LeanSerializer, spec_messages
from core.api.query import DayField, InstantField, QueryIntegerField, query_time_bounds
from tracking.selectors.events import EVENT_TYPES

PAGE_SIZE_MAX = 100
RANGE_DAYS_DEFAULT = 30
RANGE_DAYS_MAX = 366

# DayRangeQuerySerializer's parameters as the OpenAPI description shows them.
DAY_RANGE = [
    OpenApiParameter("dateFrom", str, description="YYYY-MM-DD, inclusive (default: 29 days before dateTo)"),
    OpenApiParameter("dateTo", str, description="YYYY-MM-DD, inclusive (default: today, UTC); range ≤ 366 days"),
]


class EventsQuerySerializer(LeanSerializer):
    page = QueryIntegerField(min_value=1, invalid="page must be a positive integer", required=False)
    pageSize = QueryIntegerField(
        min_value=1,
        max_value=PAGE_SIZE_MAX,
        invalid="pageSize must be a positive integer",
        too_big=f"pageSize must be at most {PAGE_SIZE_MAX}",
        required=False,
    )
    eventType = serializers.ChoiceField(
        choices=EVENT_TYPES,
        required=False,
        error_messages=spec_messages("eventType must be one of click, lead, conversion"),
    )
    dateFrom = InstantField(message="dateFrom must be an ISO 8601 date or date-time", required=False)
    dateTo = InstantField(message="dateTo must be an ISO 8601 date or date-time", required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["bounds"] = query_time_bounds(
            attrs, "dateFrom", "dateTo", reversed_message="dateFrom must not be after dateTo"
        )
        attrs.setdefault("page", 1)
        attrs.setdefault("pageSize", 10)
        return attrs


class DayRangeQuerySerializer(LeanSerializer):
    """?dateFrom=YYYY-MM-DD&dateTo=YYYY-MM-DD, inclusive UTC days. Defaults: the last 30 days up to today;
    with only one end given, the other is 30 days away from it. At most 366 days."""

    dateFrom = DayField(message="dateFrom must be a date (YYYY-MM-DD)", required=False)
    dateTo = DayField(message="dateTo must be a date (YYYY-MM-DD)", required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        today: date = self.context["today"]
        span = timedelta(days=RANGE_DAYS_DEFAULT - 1)
        start: date | None = attrs.get("dateFrom")
        end: date | None = attrs.get("dateTo")
        if start is None:
            end = end or today
            start = max(date.min + span, end) - span  # the calendar's first days: the range starts on day one
        elif end is None:
            end = min(date.max - span, start) + span  # and its last: the range ends on the last day
        if start > end:
            raise serializers.ValidationError("dateFrom must not be after dateTo")
        if (end - start).days + 1 > RANGE_DAYS_MAX:
            raise serializers.ValidationError(f"The date range must be at most {RANGE_DAYS_MAX} days")
        return {"date_from": start, "date_to": end}


EXPLAIN_SELECTORS = ("transaction_id", "click_id", "customer_key")
EXPLAIN_ONE_SELECTOR = "Give exactly one of transaction_id, click_id or customer_key"


class ExplainQuerySerializer(LeanSerializer):
    """Exactly one of ?transaction_id= (a sale), ?click_id= or ?customer_key= (a customer)."""

    transaction_id = serializers.CharField(
        required=False,
        max_length=255,
        error_messages=spec_messages("transaction_id must be a string of at most 255 characters"),
        help_text="Explain the sale with this transaction_id",
    )
    click_id = serializers.CharField(
        required=False,
        max_length=255,
        error_messages=spec_messages("click_id must be a string of at most 255 characters"),
        help_text="Explain the customer of this click (a bot's or a prefetch's click has none: the click alone)",
    )
    customer_key = serializers.CharField(
        required=False,
        max_length=255,
        error_messages=spec_messages("customer_key must be a string of at most 255 characters"),
        help_text="Explain the customer with this key (the one a sale with it would be credited to)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if len([name for name in EXPLAIN_SELECTORS if attrs.get(name)]) != 1:
            raise serializers.ValidationError(EXPLAIN_ONE_SELECTOR)
        return attrs
