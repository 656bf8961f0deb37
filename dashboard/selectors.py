"""Reads behind the dashboard API and the program-key analytics route. Every query is scoped to one program
and bounded: lists read at most a fixed number of rows through the (program, is_test, -time) indexes, and
reports aggregate in SQL, so no call grows with the size of the event tables."""

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery

from commissions.models import Commission, CommissionReview
from core.api.query import TimeBounds, day_start, iso
from fraud.rules import Traffic
from programs.models import ROLE_ACTIONS, ApiCall, KeyRotation, Partner, PartnerProgram, Program
from programs.selectors import program_live_key_get, program_settings_data
from tracking.insight.rollups import (
    Watermarks,
    rollup_read,
    rollup_sums,
    rows_with_delta,
)
from tracking.models import ClickEvent, DailyRollup, LeadEvent, ProcessorEvent, SaleEvent
from tracking.selectors import marked_as, marked_clicks
from tracking.services.tracker import referrer_domain_of, utm_params_of

EVENT_TYPES = ("click", "lead", "conversion")
# Items per type read for the events list, as a multiple of pageSize (the spec's cap).
EVENTS_CAP_FACTOR = 3
# Newest first; equal times list the later funnel step first, then the higher id.
_TYPE_RANK = {"conversion": 2, "lead": 1, "click": 0}
# Clicks that count in metrics (fraud.rules.Traffic.HUMAN): duplicates, bots and prefetches are listed, not counted.
COUNTED_CLICKS = Q(traffic=Traffic.HUMAN)
# The sources report reads at most this many of the range's newest live clicks (see click_sources_get).
SOURCES_CLICK_LIMIT = 10_000
SOURCES_TOP = 20
NO_PARTNER_NAME = "(no partner)"


# --- Status -----------------------------------------------------------------------------------------------


def tracking_status_get(*, program: Program, role: str, now: datetime) -> dict[str, Any]:
    """The program's settings, key and Stripe state, the caller's role and actions, and the time of the
    latest live event of each type. Three queries: live key, latest processor event, latest events."""
    live_key = program_live_key_get(program_id=program.pk)
    rotation = KeyRotation.of(live_key, now)
    last_processor = (
        ProcessorEvent.objects.filter(program=program)
        .order_by("-received_at", "-pk")
        .values("received_at", "event_type")
        .first()
    )

    def latest(model, time_field: str, *counted: Q) -> Subquery:
        rows = model.objects.filter(*counted, program=OuterRef("pk"), is_test=False).order_by(f"-{time_field}")
        return Subquery(rows.values(time_field)[:1])

    last = (
        Program.objects.filter(pk=program.pk)
        .annotate(
            # A counted click: a crawler or a prefetch hitting a link is not tracking at work (readiness).
            last_click=latest(ClickEvent, "click_timestamp", COUNTED_CLICKS),
            last_lead=latest(LeadEvent, "lead_timestamp"),
            last_sale=latest(SaleEvent, "sale_date"),
        )
        .values("last_click", "last_lead", "last_sale")
        .get()
    )
    return {
        "program": {
            **program_settings_data(program, live_key=live_key),
            "cookie_window_days": program.cookie_window_days,
            "key_rotation": {
                "flagged": rotation.flagged,
                "marked_at": iso(rotation.marked_at),
                "deadline": iso(rotation.deadline),
                "retired": rotation.retired,
            },
            "stripe": {
                "connected": bool(program.stripe_account_id),
                "account_id": program.stripe_account_id,
                "connected_at": iso(program.stripe_connected_at),
                "last_event_at": iso(last_processor["received_at"]) if last_processor else None,
                "last_event_type": last_processor["event_type"] if last_processor else None,
            },
        },
        "role": role,
        "actions": sorted(ROLE_ACTIONS.get(role, frozenset())),
        "last_event_at": {
            "click": iso(last["last_click"]),
            "lead": iso(last["last_lead"]),
            "sale": iso(last["last_sale"]),
        },
    }


# --- Events list ------------------------------------------------------------------------------------------


def _click_item(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "event_type": "click",
        "timestamp": iso(row["click_timestamp"]),
        "click_id": row["click_id"],
        "session_id": row["session_id"],
        "page_url": row["page_url"],
        "referrer_url": row["referrer_url"],
        "geo_country": row["geo_country"],
        "geo_region": row["geo_region"],
        "geo_city": row["geo_city"],
        "device_type": row["device_type"],
        "device_os": row["device_os"],
        "browser_name": row["browser_name"],
        "converted": row["customer__first_sale_at"] is not None,
        "createdAt": iso(row["created_at"]),
    }


def _lead_item(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "event_type": "lead",
        "timestamp": iso(row["lead_timestamp"]),
        "click_id": row["click_id"],
        "customer_key": row["customer_key"],
        "session_id": row["session_id"],
        "page_url": row["page_url"],
        "converted": row["customer__first_sale_at"] is not None,
        "createdAt": iso(row["created_at"]),
    }


def _conversion_item(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "event_type": "conversion",
        "timestamp": iso(row["sale_date"]),
        "click_id": row["click_id"],
        "amount_cents": row["amount_cents"],
        "currency": row["currency"],
        "sale_type": row["sale_type"],
        "payment_status": row["payment_status"],
        "processor_event_id": row["processor_event_id"],
        "is_recurring": row["is_recurring"],
        "createdAt": iso(row["created_at"]),
    }


# Per type: model, time field, the columns read, the item builder. `converted` is the customer's
# first_sale_at, read through the join (a LEFT JOIN for clicks, whose customer may be gone), never per row.
_EVENT_SOURCES: dict[
    str,
    tuple[type[ClickEvent | LeadEvent | SaleEvent], str, tuple[str, ...], Callable[[dict[str, Any]], dict[str, Any]]],
] = {
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
        _click_item,
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
        _lead_item,
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
        _conversion_item,
    ),
}


def tracking_events_list(
    *, program: Program, event_type: str | None, bounds: TimeBounds, page: int, page_size: int
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The spec's events list: live events only; each type read newest first, capped at 3 x pageSize rows
    (one indexed query per type, the date bounds applied in SQL), merged newest first, then paginated.
    `total` is the merged set's size, so pages past it are empty even when older events exist."""
    cap = EVENTS_CAP_FACTOR * page_size
    merged: list[tuple[tuple, dict[str, Any]]] = []
    for kind in (event_type,) if event_type else EVENT_TYPES:
        model, time_field, columns, build = _EVENT_SOURCES[kind]
        rows = (
            model.objects.filter(Q(program=program, is_test=False) & bounds.q(time_field))
            .order_by(f"-{time_field}", "-id")
            .values(*columns)[:cap]
        )
        merged.extend(((row[time_field], _TYPE_RANK[kind], row["id"]), build(row)) for row in rows)
    merged.sort(key=lambda pair: pair[0], reverse=True)
    total = len(merged)
    start = (page - 1) * page_size
    items = [item for _, item in merged[start : start + page_size]]
    pagination = {"page": page, "pageSize": page_size, "pageCount": math.ceil(total / page_size), "total": total}
    return items, pagination


# --- Performance ------------------------------------------------------------------------------------------


def _empty_row() -> dict[str, int]:
    return {"clicks": 0, "leads": 0, "sales": 0, "revenue_cents": 0, "commission_cents": 0}


# The report's numbers and the rollup columns they come from: settled leads, attributed sales.
_PERFORMANCE_COLUMNS = {
    "clicks": "clicks",
    "leads": "leads",
    "sales": "attributed_sales",
    "revenue_cents": "revenue_cents",
    "commission_cents": "commission_cents",
}


def tracking_performance_get(*, program: Program, date_from: date, date_to: date) -> dict[str, Any]:
    """Live clicks, settled live leads and attributed live sales per UTC day and per partner, over the
    inclusive range. Revenue is the sales' amount_cents; commission is what their commissions still pay
    (commissions.selectors.payable_cents, the definition every page uses).
    Amounts are summed as stored, whatever their currency.
    Read from the daily rollups plus the live delta of the events not folded in yet (tracking.insight.rollups): the
    cost follows the days and partners in range, not the number of events."""

    def read(marks: Watermarks) -> list[dict[str, Any]]:
        rollups = DailyRollup.objects.filter(program=program, is_test=False, day__gte=date_from, day__lte=date_to)
        by_day_and_partner = rollup_sums(rollups, "day", "partner_id")
        in_range = lambda row: date_from <= row["day"] <= date_to  # noqa: E731
        return list(rows_with_delta(marks, by_day_and_partner, program_id=program.pk, keep=in_range))

    rows = rollup_read(read)
    names = dict(
        Partner.objects.filter(pk__in={row["partner_id"] for row in rows if row["partner_id"]}).values_list(
            "pk", "name"
        )
    )
    days: dict[date, dict[str, int]] = {}
    day = date_from
    while day <= date_to:
        days[day] = _empty_row()
        day += timedelta(days=1)
    partners: dict[int | None, dict[str, Any]] = {}
    for row in rows:
        # A partner deleted since its events counts under "(no partner)", as its raw events name none.
        partner_id = row["partner_id"] if row["partner_id"] in names else None
        found = partners.get(partner_id)
        if found is None:
            found = partners[partner_id] = {
                "partner_id": partner_id,
                "partner_name": NO_PARTNER_NAME if partner_id is None else names[partner_id],
                **_empty_row(),
            }
        for target in (days[row["day"]], found):
            for name, column in _PERFORMANCE_COLUMNS.items():
                target[name] += row[column] or 0

    totals = _empty_row()
    for day_row in days.values():
        for name in totals:
            totals[name] += day_row[name]
    by_partner = sorted(
        (row for row in partners.values() if any(row[name] for name in _PERFORMANCE_COLUMNS)),
        # Ties: more sales, more clicks, then by id, the deleted partners' row last.
        key=lambda row: (
            -row["revenue_cents"],
            -row["sales"],
            -row["clicks"],
            row["partner_id"] is None,
            row["partner_id"] or 0,
        ),
    )
    return {
        "range": {"from": date_from.isoformat(), "to": date_to.isoformat()},
        "totals": totals,
        "by_day": [{"date": day.isoformat(), **row} for day, row in days.items()],
        "by_partner": by_partner,
    }


# --- Test events ------------------------------------------------------------------------------------------


def tracking_test_events_get(*, program: Program, since: datetime, now: datetime) -> dict[str, Any]:
    """Which test events of each type arrived since `since`: count, latest time and highest id per type
    (one indexed aggregate per type), so an integrator can see that their own test calls landed."""
    events: dict[str, dict[str, Any]] = {}
    for kind, model, time_field in (
        ("click", ClickEvent, "click_timestamp"),
        ("lead", LeadEvent, "lead_timestamp"),
        ("sale", SaleEvent, "sale_date"),
    ):
        row = model.objects.filter(program=program, is_test=True, **{f"{time_field}__gte": since}).aggregate(
            count=Count("id"), last_at=Max(time_field), last_event_id=Max("id")
        )
        events[kind] = {"count": row["count"], "last_at": iso(row["last_at"]), "last_event_id": row["last_event_id"]}
    return {
        "program_id": program.pk,
        "since": since.isoformat(),
        "checked_at": now.isoformat(),
        "events": events,
        "received": [kind for kind, row in events.items() if row["count"]],
        "missing": [kind for kind, row in events.items() if not row["count"]],
    }


# --- Click sources ----------------------------------------------------------------------------------------


def click_sources_get(*, program: Program, date_from: date, date_to: date, limit: int | None = None) -> dict[str, Any]:
    """Top referrer domains and utm_source values of the program's live clicks in the inclusive UTC range.

    Domains and utm values live inside URLs, which SQL cannot parse portably, so this reads the range's
    newest `limit` clicks (one indexed query, two text columns) and counts in Python. A busier range is
    reported over that sample, and `sample.truncated` says so."""
    limit = limit or SOURCES_CLICK_LIMIT
    window = TimeBounds(start=day_start(date_from), end=day_start(date_to + timedelta(days=1)), end_exclusive=True)
    rows = list(
        ClickEvent.objects.filter(Q(program=program, is_test=False) & COUNTED_CLICKS & window.q("click_timestamp"))
        .order_by("-click_timestamp", "-id")
        .values_list("referrer_url", "page_url")[: limit + 1]
    )
    truncated = len(rows) > limit
    rows = rows[:limit]
    domains: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for referrer_url, page_url in rows:
        domains[referrer_domain_of(referrer_url) or "(direct)"] += 1
        sources[utm_params_of(page_url)["utm_source"] or "(none)"] += 1

    def top(counter: Counter[str], name: str) -> list[dict[str, Any]]:
        ranked = sorted(counter.items(), key=lambda pair: (-pair[1], pair[0]))[:SOURCES_TOP]
        return [{name: value, "clicks": clicks} for value, clicks in ranked]

    return {
        "range": {"from": date_from.isoformat(), "to": date_to.isoformat()},
        "referrer_domains": top(domains, "domain"),
        "utm_sources": top(sources, "utm_source"),
        "sample": {"clicks": len(rows), "limit": limit, "truncated": truncated},
    }


# --- Request log ------------------------------------------------------------------------------------------

LOGS_PAGE_SIZE_MAX = 100


@dataclass(frozen=True)
class LogsFilter:
    """Filters of the request log. `status`: a class ("4xx") or an exact code ("404")."""

    status: str = ""
    route: str = ""
    error_code: str = ""
    since: datetime | None = None
    until: datetime | None = None

    def q(self) -> Q:
        condition = Q()
        if self.status.endswith("xx"):
            low = int(self.status[0]) * 100
            condition &= Q(status__gte=low, status__lt=low + 100)
        elif self.status:
            condition &= Q(status=int(self.status))
        if self.route:
            condition &= Q(route=self.route)
        if self.error_code:
            condition &= Q(error_code=self.error_code)
        if self.since is not None:
            condition &= Q(created_at__gte=self.since)
        if self.until is not None:
            condition &= Q(created_at__lte=self.until)
        return condition


_API_CALL_FIELDS = (
    "id",
    "created_at",
    "method",
    "route",
    "status",
    "error_code",
    "message",
    "request_id",
    "key_masked",
    "key_mode",
    "latency_ms",
    "excerpt",
)


def api_calls_list(
    *, program_id: int, filters: LogsFilter, limit: int, cursor: int | None = None, after: int | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """The program's logged calls and the cursor of the next page (None on the last). Newest first, older pages
    by `cursor` (the id the previous page ended after); with `after`, the rows newer than that id, oldest first
    (what a follower has not seen yet). One query per page: limit + 1 rows tell whether another page exists."""
    rows = ApiCall.objects.filter(filters.q(), program_id=program_id)
    if after is not None:
        rows = rows.filter(id__gt=after).order_by("id")
    else:
        rows = rows.order_by("-id")
        if cursor is not None:
            rows = rows.filter(id__lt=cursor)
    items = list(rows.values(*_API_CALL_FIELDS)[: limit + 1])
    more = len(items) > limit
    items = items[:limit]
    for item in items:
        item["created_at"] = iso(item["created_at"])
    return items, (str(items[-1]["id"]) if more else None)


# --- The review tab (fraud rules) ----------------------------------------------------------------------------

# The held commissions' rule filter value for an owner's hold (hold_rule "").
OWNER_HOLD = "owner"
# Partners offered in a review filter (a program with more is filtered by the first ones by name).
REVIEW_PARTNERS_CAP = 500


def held_commissions_list(*, program_id: int, rule: str | None = None, partner_id: int | None = None) -> QuerySet:
    """The program's held commissions, newest first (the commission_program_held index), with partner and sale.
    `rule`: the rule that held them, OWNER_HOLD for an owner's hold."""
    rows = Commission.objects.filter(program_id=program_id, held_at__isnull=False)
    if rule is not None:
        rows = rows.filter(hold_rule="" if rule == OWNER_HOLD else rule)
    if partner_id is not None:
        rows = rows.filter(partner_id=partner_id)
    return rows.select_related("partner", "sale").order_by("-created_at", "-id")


def reviews_recent(*, program_id: int, limit: int) -> list[CommissionReview]:
    """The program's latest hold decisions, newest first, each with its commission's partner."""
    rows = CommissionReview.objects.filter(program_id=program_id).select_related("commission__partner")
    return list(rows.order_by("-created_at", "-id")[:limit])


# Flagged clicks: the click_program_flagged index's own condition, so the planner can use it.
def flagged_clicks_list(
    *,
    program_id: int,
    kind: str | None = None,
    partner_id: int | None = None,
    link_code: str | None = None,
) -> QuerySet:
    """The program's clicks that a rule marked (not counted, or flagged), newest first, with partner and link.
    `kind`: one of tracking.selectors.MARKED_KINDS."""
    rows = marked_clicks(program_id=program_id)
    if kind is not None:
        rows = rows.filter(marked_as(kind))
    if partner_id is not None:
        rows = rows.filter(partner_id=partner_id)
    if link_code is not None:
        rows = rows.filter(link__short_link=link_code)
    return rows.select_related("partner", "link")


def review_partners(*, program_id: int) -> list[Partner]:
    """The program's enrolled partners by name, for the review filters."""
    enrolled = PartnerProgram.objects.filter(program_id=program_id).values("partner_id")
    return list(Partner.objects.filter(pk__in=enrolled).only("pk", "name").order_by("name", "pk")[:REVIEW_PARTNERS_CAP])
