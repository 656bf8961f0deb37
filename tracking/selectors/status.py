"""Where a program's tracking stands: its settings, key and Stripe state with the latest live event of each type
(the status route), and which test events arrived lately (the test-events check)."""

from datetime import datetime
from typing import Any

from django.db.models import Count, Max, OuterRef, Q, Subquery

from core.api.query import iso
from programs.models import ROLE_ACTIONS, KeyRotation, Program
from programs.selectors import program_live_key_get, program_settings_data
from tracking.models import ClickEvent, LeadEvent, ProcessorEvent, SaleEvent

from .clicks import COUNTED_CLICKS


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

    def latest(model: type[ClickEvent | LeadEvent | SaleEvent], time_field: str, *counted: Q) -> Subquery:
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
