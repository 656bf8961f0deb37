"""Emitting an event: one outbox row, written inside the caller's transaction (or its one statement), fanned
out to endpoints after commit. A rolled-back change leaves no event; a committed one always has its row, and
the sweep (webhooks.fanout) delivers it even when the broker was down at commit."""

import secrets
from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import WebhookEvent
from .queue import FAN_OUT, queue

EVENT_ID_PREFIX = "evt_"


def event_id_generate() -> str:
    """The event's id, which is also the webhook-id header receivers dedupe on."""
    return EVENT_ID_PREFIX + secrets.token_hex(12)


def event_new(
    *,
    program_id: int,
    type: str,
    livemode: bool,
    data: dict[str, Any],
    object_id: int | None = None,
    synthetic: bool = False,
) -> WebhookEvent:
    """The unsaved event row (for callers that insert it together with the row it is about)."""
    return WebhookEvent(
        public_id=event_id_generate(),
        program_id=program_id,
        type=type,
        livemode=livemode,
        object_id=object_id,
        data=data,
        synthetic=synthetic,
        created_at=timezone.now(),
    )


def event_saved(event: WebhookEvent) -> WebhookEvent:
    """Call once the event's row is inserted: fans it out after the transaction commits."""
    transaction.on_commit(lambda: queue(FAN_OUT, event.pk))
    return event


def event_emit(
    *,
    program_id: int,
    type: str,
    livemode: bool,
    data: dict[str, Any],
    object_id: int | None = None,
    synthetic: bool = False,
) -> WebhookEvent:
    """Writes the event in the caller's transaction and fans it out after commit."""
    event = event_new(
        program_id=program_id, type=type, livemode=livemode, data=data, object_id=object_id, synthetic=synthetic
    )
    event.save(force_insert=True)
    return event_saved(event)
