"""Writes for stored Stripe events: storing a verified event once and replaying stored events. Both hand the
processing to the worker after their transaction commits."""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction

from core.tasks import enqueue
from programs.models import Program

from ..models import ProcessorEvent
from ..tasks import processor_event_attempt_task

logger = logging.getLogger("svc.stripe")


@dataclass(frozen=True)
class ProcessorEventStored:
    """What became of a verified event: stored and queued, or a redelivery of one already stored."""

    event_id: str
    duplicate: bool
    event: ProcessorEvent | None = None


def processor_event_store(*, event_id: str, payload: dict[str, Any]) -> ProcessorEventStored:
    """Stores a verified event once (Stripe's event id is the idempotency key) and queues its processing once the
    row is committed. A redelivery stores nothing and is never processed twice."""
    account_id = payload.get("account") or ""
    program = Program.objects.filter(stripe_account_id=account_id).first() if account_id else None
    try:
        with transaction.atomic():
            event = ProcessorEvent.objects.create(
                event_id=event_id,
                event_type=str(payload.get("type") or ""),
                account_id=account_id,
                program=program,
                livemode=bool(payload.get("livemode")),
                payload=payload,
            )
            transaction.on_commit(lambda: enqueue(processor_event_attempt_task, event.pk))
    except IntegrityError:
        return ProcessorEventStored(event_id=event_id, duplicate=True)
    logger.info("stripe.event_received", extra={"event_id": event_id, "type": event.event_type})
    return ProcessorEventStored(event_id=event_id, duplicate=False, event=event)


def processor_events_replay(*, event_pks: Iterable[int]) -> int:
    """Puts stored events back to `received` and queues each for processing again. Processing is idempotent:
    a payment already recorded is not counted twice. Returns how many were queued."""
    pks = list(event_pks)
    with transaction.atomic():
        replayed = list(ProcessorEvent.objects.filter(pk__in=pks).order_by("pk").values_list("pk", flat=True))
        ProcessorEvent.objects.filter(pk__in=replayed).update(status=ProcessorEvent.Status.RECEIVED)
        for pk in replayed:
            transaction.on_commit(partial(enqueue, processor_event_attempt_task, pk))
    logger.info("stripe.events_replayed", extra={"event_pks": replayed})
    return len(replayed)
