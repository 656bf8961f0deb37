"""From events to deliveries: each event becomes one delivery per endpoint that wants it, and the sweep sends
whatever is due, so an event written while the broker was down, or a retry left for later, still goes out."""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, Subquery
from django.utils import timezone

from .models import DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent
from .queue import DELIVER, queue

logger = logging.getLogger("svc.webhooks")


def endpoints_for(event: WebhookEvent) -> list[WebhookEndpoint]:
    """The enabled endpoints that want the event: the program's own and its workspace's workspace-wide ones,
    made before the event (an endpoint added later does not receive older events)."""
    workspace_id = WebhookEvent.objects.filter(pk=event.pk).values("program__workspace_id")[:1]
    candidates = WebhookEndpoint.objects.filter(
        Q(program_id=event.program_id) | Q(program__isnull=True, workspace_id=Subquery(workspace_id)),
        enabled=True,
        created_at__lte=event.created_at,
    )
    return [endpoint for endpoint in candidates if endpoint.wants(event_type=event.type, livemode=event.livemode)]


def event_fan_out(*, event_id: int, now: datetime | None = None) -> list[int]:
    """Creates the event's deliveries, once however many tasks and sweeps try at the same time (the event row is
    claimed, and (event, endpoint) is unique); queues them after commit. Returns the new deliveries' ids."""
    now = now or timezone.now()
    own_transaction = not connection.in_atomic_block
    with transaction.atomic():
        if own_transaction:
            _commit_unflushed()
        event = (
            WebhookEvent.objects.select_for_update(skip_locked=True)
            .filter(pk=event_id, fanned_out_at__isnull=True)
            .first()
        )
        if event is None:
            return []
        endpoints = endpoints_for(event)
        if endpoints:
            WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(event=event, endpoint=endpoint, next_attempt_at=now) for endpoint in endpoints],
                ignore_conflicts=True,
            )
        WebhookEvent.objects.filter(pk=event.pk).update(fanned_out_at=now)
        delivery_ids = list(
            WebhookDelivery.objects.filter(event=event, status=DeliveryStatus.PENDING).values_list("pk", flat=True)
        )
        if delivery_ids:
            transaction.on_commit(lambda: deliveries_enqueue(delivery_ids))
    return delivery_ids


def _commit_unflushed() -> None:
    """The fan-out's commit does not wait for the WAL flush (PostgreSQL; this transaction only). Without a
    broker the fan-out runs in the request that wrote the event, which would otherwise wait for one more flush
    per event. Were the commit lost in a crash, the event is still not fanned out and the sweep fans it out
    again ((event, endpoint) is unique); a delivery's lease UPDATE, before anything is sent, waits for the
    flush, and the WAL is flushed in order."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def deliveries_enqueue(delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        queue(DELIVER, delivery_id)


def webhooks_sweep(*, now: datetime | None = None, batch_size: int = 500) -> tuple[int, int]:
    """Fans out the events not fanned out yet and queues the deliveries that are due and not being sent.
    Returns (events fanned out, deliveries queued)."""
    now = now or timezone.now()
    fanned = 0
    after = 0
    while True:
        ids = list(
            WebhookEvent.objects.filter(fanned_out_at__isnull=True, pk__gt=after)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch_size]
        )
        for event_id in ids:
            try:
                event_fan_out(event_id=event_id, now=now)
                fanned += 1
            except Exception:
                logger.exception("webhooks.fan_out_failed", extra={"event_id": event_id})
        if len(ids) < batch_size:
            break
        after = ids[-1]
    due = list(
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[: batch_size * 4]
    )
    deliveries_enqueue(due)
    return fanned, len(due)


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
