"""From events to deliveries: each event becomes one delivery per endpoint that wants it, and the sweep sends
whatever is due, so an event written while the broker was down, or a retry left for later, still goes out."""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from .dispatch import deliveries_queue
from .models import DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent
from .sql import COMMIT_UNFLUSHED

logger = logging.getLogger("svc.webhooks")


def _wants(endpoint: WebhookEndpoint, event: WebhookEvent, workspace_of: dict[int, int]) -> bool:
    """The endpoint is the event's program's, or its workspace's workspace-wide one; enabled (the query's); made
    before the event (an endpoint added later does not receive older events); and it wants the type and mode."""
    if endpoint.program_id is not None:
        mine = endpoint.program_id == event.program_id
    else:
        mine = endpoint.workspace_id == workspace_of.get(event.program_id)
    return (
        mine
        and endpoint.created_at <= event.created_at
        and endpoint.wants(event_type=event.type, livemode=event.livemode)
    )


def _workspaces_of(event_ids: list[int]) -> dict[int, int]:
    """program id -> workspace id, for the events' programs."""
    return dict(
        WebhookEvent.objects.filter(pk__in=event_ids).values_list("program_id", "program__workspace_id").distinct()
    )


def _candidates(program_ids: set[int], workspace_of: dict[int, int]) -> list[WebhookEndpoint]:
    return list(
        WebhookEndpoint.objects.filter(
            Q(program_id__in=program_ids) | Q(program__isnull=True, workspace_id__in=set(workspace_of.values())),
            enabled=True,
        )
    )


def events_fan_out(*, event_ids: list[int], now: datetime | None = None, queue_deliveries: bool = True) -> list[int]:
    """Creates the events' deliveries, once however many tasks and sweeps try at the same time (each event row is
    claimed, skipping those another run holds, and (event, endpoint) is unique); queues them after commit, as far
    as the webhook queue has room (webhooks.dispatch; a sweep queues the others). In a
    few statements whatever the number of events, so an event no endpoint wants costs a share of one UPDATE.
    Returns the new deliveries' ids."""
    now = now or timezone.now()
    own_transaction = not connection.in_atomic_block
    with transaction.atomic():
        if own_transaction:
            _commit_unflushed()
        events = list(
            WebhookEvent.objects.select_for_update(skip_locked=True)
            .filter(pk__in=event_ids, fanned_out_at__isnull=True)
            .order_by("pk")
        )
        if not events:
            return []
        claimed = [event.pk for event in events]
        workspace_of = _workspaces_of(claimed)
        endpoints = _candidates({event.program_id for event in events}, workspace_of)
        deliveries = [
            WebhookDelivery(event=event, endpoint=endpoint, next_attempt_at=now)
            for event in events
            for endpoint in endpoints
            if _wants(endpoint, event, workspace_of)
        ]
        WebhookEvent.objects.filter(pk__in=claimed).update(fanned_out_at=now)
        if not deliveries:
            return []
        WebhookDelivery.objects.bulk_create(deliveries, ignore_conflicts=True)
        delivery_ids = list(
            WebhookDelivery.objects.filter(event_id__in=claimed, status=DeliveryStatus.PENDING).values_list(
                "pk", flat=True
            )
        )
        if queue_deliveries:
            transaction.on_commit(lambda: deliveries_queue(ids=delivery_ids))
    return delivery_ids


def _commit_unflushed() -> None:
    """The fan-out's commit does not wait for the WAL flush (PostgreSQL; this transaction only). Without a
    broker the fan-out runs in the request that wrote the event, which would otherwise wait for one more flush
    per event. Were the commit lost in a crash, the event is still not fanned out and the sweep fans it out
    again ((event, endpoint) is unique); a delivery's lease UPDATE, before anything is sent, waits for the
    flush, and the WAL is flushed in order."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(COMMIT_UNFLUSHED)


def event_fan_out(*, event_id: int, now: datetime | None = None) -> list[int]:
    """events_fan_out of one event (the task queued when the event committed)."""
    return events_fan_out(event_ids=[event_id], now=now)


def events_fan_out_pending(*, now: datetime, batch_size: int = 500) -> int:
    """Fans out, in batches, every event not fanned out yet (their deliveries are left for deliveries_queue).
    Returns how many events were fanned out."""
    fanned = 0
    after = 0
    while True:
        ids = list(
            WebhookEvent.objects.filter(fanned_out_at__isnull=True, pk__gt=after)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch_size]
        )
        if ids:
            try:
                events_fan_out(event_ids=ids, now=now, queue_deliveries=False)
                fanned += len(ids)
            except Exception:
                logger.exception("webhooks.fan_out_failed", extra={"event_ids": f"{ids[0]}..{ids[-1]}"})
        if len(ids) < batch_size:
            return fanned
        after = ids[-1]


def webhooks_sweep(*, now: datetime | None = None, batch_size: int = 500) -> tuple[int, int]:
    """Fans out the events not fanned out yet, then queues the deliveries that are due and neither being sent nor
    queued already, oldest due first, as many as the webhook queue has room for (webhooks.dispatch): a backlog
    waits in the database and goes out as workers drain the queue. Returns (events fanned out, deliveries
    queued)."""
    now = now or timezone.now()
    fanned = events_fan_out_pending(now=now, batch_size=batch_size)
    return fanned, len(deliveries_queue(now=now))


def webhook_events_prune(*, now: datetime | None = None, batch_size: int = 5000) -> int:
    """Drops events older than WEBHOOK_EVENT_RETENTION_DAYS with their deliveries and attempts, except events
    with a delivery still pending. Returns how many events were dropped."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.WEBHOOK_EVENT_RETENTION_DAYS)
    dropped = 0
    while True:
        ids = list(
            WebhookEvent.objects.filter(created_at__lt=cutoff)
            .exclude(deliveries__status=DeliveryStatus.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch_size]
        )
        if not ids:
            return dropped
        WebhookEvent.objects.filter(pk__in=ids).delete()
        dropped += len(ids)
