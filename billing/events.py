"""Processing of stored billing events: each once, by its platform's reader. An event's outcome is kept in words for
the owner's connection page and for operators; anything unexpected raises, rolls the event back whole and is
retried by the task's policy."""

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from tracking.payments import Outcome, ignored

from .models import BillingEvent
from .platforms import reader_for

logger = logging.getLogger("svc.billing")


def billing_event_process(*, event_pk: int) -> BillingEvent:
    """Processes one stored event once. The event row is locked for the whole run, so a redelivered, replayed or
    swept task cannot process it twice."""
    with transaction.atomic():
        event = BillingEvent.objects.select_for_update(of=("self",)).select_related("connection").get(pk=event_pk)
        if event.status in (BillingEvent.Status.PROCESSED, BillingEvent.Status.IGNORED):
            return event
        if not event.connection.is_active:
            outcome: Outcome = ignored("the connection was switched off before this event was processed")
        else:
            outcome = reader_for(event.platform).handle(event)
        event.status = outcome.status
        event.outcome = outcome.text[:255]
        event.sale = outcome.sale
        event.attempts += 1
        event.last_error = ""
        event.processed_at = timezone.now()
        event.save()
    logger.info(
        "billing.event_processed",
        extra={"platform": event.platform, "event_id": event.event_id, "outcome": event.outcome},
    )
    return event


def billing_event_failed(*, event_pk: int, error: str) -> None:
    BillingEvent.objects.filter(pk=event_pk).exclude(status=BillingEvent.Status.PROCESSED).update(
        status=BillingEvent.Status.FAILED, last_error=error[:2000], attempts=F("attempts") + 1
    )


def billing_event_attempt(*, event_pk: int) -> str:
    """One processing attempt, as the worker runs it: a failure is recorded on the event and raised again so the
    task's retry policy tries later. Returns the status."""
    try:
        return billing_event_process(event_pk=event_pk).status
    except Exception as exc:
        billing_event_failed(event_pk=event_pk, error=f"{type(exc).__name__}: {exc}")
        raise


# An event still `received` this long after it arrived lost its task (a broker outage when it was queued, a worker
# killed before it acknowledged): the sweep queues it again.
STALE_RECEIVED_SECONDS = 120


def billing_events_stale(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """The events left `received`, oldest first."""
    cutoff = (now or timezone.now()) - timedelta(seconds=STALE_RECEIVED_SECONDS)
    return list(
        BillingEvent.objects.filter(status=BillingEvent.Status.RECEIVED, received_at__lt=cutoff)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
