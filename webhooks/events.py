"""Emitting an event: one outbox row, written inside the caller's transaction (or its one statement), fanned
out to endpoints after commit. A rolled-back change leaves no event; a committed one always has its row, and
the sweep (webhooks.fanout) delivers it even when the broker was down at commit."""

import logging
import secrets
import time
from typing import Any, Required, TypedDict, Unpack

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.logging import outage_log

from .dispatch import broker_holds_messages, fan_out_request
from .models import WebhookEndpoint, WebhookEvent
from .queue import FAN_OUT, queue

logger = logging.getLogger("svc.webhooks")

EVENT_ID_PREFIX = "evt_"


def event_id_generate() -> str:
    """The event's id, which is also the webhook-id header receivers dedupe on."""
    return EVENT_ID_PREFIX + secrets.token_hex(12)


class EventFields(TypedDict, total=False):
    """What an event says: its program, type, mode and data, and the row it is about (object_id). A synthetic one
    is a test the owner sent."""

    program_id: Required[int]
    type: Required[str]
    livemode: Required[bool]
    data: Required[dict[str, Any]]
    object_id: int | None
    synthetic: bool


def event_new(**fields: Unpack[EventFields]) -> WebhookEvent:
    """The unsaved event row (for callers that insert it together with the row it is about)."""
    return WebhookEvent(
        public_id=event_id_generate(),
        program_id=fields["program_id"],
        type=fields["type"],
        livemode=fields["livemode"],
        object_id=fields.get("object_id"),
        data=fields["data"],
        synthetic=fields.get("synthetic", False),
        created_at=timezone.now(),
    )


def event_saved(event: WebhookEvent) -> WebhookEvent:
    """Call once the event's row is inserted. After the transaction commits, when an endpoint may want the
    event, a fan-out is requested, so it goes out at once; otherwise (and if that message is lost) the sweep fans
    it out within WEBHOOK_SWEEP_SECONDS. Queuing a Celery message costs about a millisecond, so the many events
    no endpoint wants are not queued one by one: the sweep fans them out in batches."""
    transaction.on_commit(lambda: _fan_out_soon(program_id=event.program_id, event_id=event.pk))
    return event


def _fan_out_soon(*, program_id: int, event_id: int) -> None:
    # After the commit: a failure here must not fail the change's response; the sweep fans the event out.
    try:
        if not program_has_endpoints(program_id):
            return
        if broker_holds_messages():
            # One message for every event written until a worker takes it, not one per event: the queue holds
            # the same few messages however fast events come (webhooks.dispatch).
            fan_out_request()
        else:
            queue(FAN_OUT, event_id)  # runs here, now
    except Exception as error:
        outage_log(logger, "webhooks.fan_out_not_queued", error, event_id=event_id)


# program id -> (has an enabled endpoint, until when this process believes it)
_has_endpoints: dict[int, tuple[bool, float]] = {}
_HAS_ENDPOINTS_MAX_ENTRIES = 10_000


def program_has_endpoints(program_id: int) -> bool:
    """Whether the program, or its workspace, has an enabled endpoint. Kept WEBHOOK_ENDPOINT_CACHE_SECONDS per
    process (endpoint changes clear it in the process that made them); a stale answer only delays an event to the
    next sweep."""
    seconds = settings.WEBHOOK_ENDPOINT_CACHE_SECONDS
    now = time.monotonic()
    cached = _has_endpoints.get(program_id)
    if seconds and cached is not None and cached[1] > now:
        return cached[0]
    found = (
        WebhookEndpoint.objects.filter(enabled=True)
        .filter(Q(program_id=program_id) | Q(program__isnull=True, workspace__programs=program_id))
        .exists()
    )
    if seconds:
        if len(_has_endpoints) >= _HAS_ENDPOINTS_MAX_ENTRIES:
            _has_endpoints.clear()
        _has_endpoints[program_id] = (found, now + seconds)
    return found


def endpoints_changed() -> None:
    """An endpoint was made, changed or deleted: this process asks again."""
    _has_endpoints.clear()


def event_emit(**fields: Unpack[EventFields]) -> WebhookEvent:
    """Writes the event in the caller's transaction and fans it out after commit."""
    event = event_new(**fields)
    event.save(force_insert=True)
    return event_saved(event)
