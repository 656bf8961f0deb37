"""The live events list behind the dashboard's events route: each type read newest first through the
(program, is_test, -time) indexes, capped, merged and paginated (one bounded query per type)."""

import math
from datetime import datetime
from typing import Any

from django.db.models import Q

from core.api.query import TimeBounds
from programs.models import Program
from tracking.models import ClickEvent, LeadEvent, SaleEvent

EVENT_TYPES = ("click", "lead", "conversion")
# Items per type read for the events list, as a multiple of pageSize (the spec's cap).
EVENTS_CAP_FACTOR = 3
# Newest first; equal times list the later funnel step first, then the higher id.
_TYPE_RANK = {"conversion": 2, "lead": 1, "click": 0}


# Per type: model, time field, the columns read (the dashboard API's item serializer of the type renders them).
# `converted` is the customer's first_sale_at, read through the join (a LEFT JOIN for
# clicks, whose customer may be gone), never per row.
_EVENT_SOURCES: dict[str, tuple[type[ClickEvent | LeadEvent | SaleEvent], str, tuple[str, ...]]] = {
    "click": (
        ClickEvent,
        "click_timestamp",
        (
            "id",
            "click_timestamp",
            "click_id",
            "session_id",
            "page_url",
            "referrer_url",
            "geo_country",
            "geo_region",
            "geo_city",
            "device_type",
            "device_os",
            "browser_name",
            "created_at",
            "customer__first_sale_at",
        ),
    ),
    "lead": (
        LeadEvent,
        "lead_timestamp",
        (
            "id",
            "lead_timestamp",
            "click_id",
            "customer_key",
            "session_id",
            "page_url",
            "created_at",
            "customer__first_sale_at",
        ),
    ),
    "conversion": (
        SaleEvent,
        "sale_date",
        (
            "id",
            "sale_date",
            "click_id",
            "amount_cents",
            "currency",
            "sale_type",
            "payment_status",
            "processor_event_id",
            "is_recurring",
            "created_at",
        ),
    ),
}


def tracking_events_list(
    *, program: Program, event_type: str | None, bounds: TimeBounds, page: int, page_size: int
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The spec's events list: live events only; each type read newest first, capped at 3 x pageSize rows
    (one indexed query per type, the date bounds applied in SQL), merged newest first, then paginated.
    `total` is the merged set's size, so pages past it are empty even when older events exist. Each item is its
    row of values() with its type under "event_type"."""
    cap = EVENTS_CAP_FACTOR * page_size
    merged: list[tuple[tuple[datetime, int, int], dict[str, Any]]] = []
    for kind in (event_type,) if event_type else EVENT_TYPES:
        model, time_field, columns = _EVENT_SOURCES[kind]
        rows = (
            model.objects.filter(Q(program=program, is_test=False) & bounds.q(time_field))
            .order_by(f"-{time_field}", "-id")
            .values(*columns)[:cap]
        )
        merged.extend(((row[time_field], _TYPE_RANK[kind], row["id"]), {**row, "event_type": kind}) for row in rows)
    merged.sort(key=lambda pair: pair[0], reverse=True)
    total = len(merged)
    start = (page - 1) * page_size
    items = [item for _, item in merged[start : start + page_size]]
    pagination = {"page": page, "pageSize": page_size, "pageCount": math.ceil(total / page_size), "total": total}
    return items, pagination
