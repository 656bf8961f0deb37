"""Queuing deliveries to the broker: each once, under a claim, and never more than the queue's bound.

A delivery is queued only after it is claimed: one UPDATE of queued_until on rows that are pending, due, not
leased and not claimed, taken FOR UPDATE SKIP LOCKED so concurrent sweeps claim different rows. While the claim
lasts (claim_seconds: as long as the queue ahead takes to drain, within WEBHOOK_QUEUE_CLAIM_SECONDS) no sweep
queues the delivery again. The worker that receives the message (prefetched, or held for its countdown) cuts the
claim to WEBHOOK_RECEIVED_CLAIM_SECONDS past when it will run, and clears it as it leases the attempt
(webhooks.delivery): a worker killed holding messages leaves their claims to run out within half a minute, and the
next sweep queues the deliveries again. A message the broker lost in transit waits for its whole claim. The lease,
not the claim, keeps two attempts of one delivery from running at once: a message queued twice still sends once.

The webhook queue holds at most WEBHOOK_QUEUE_MAX messages. Every queuing runs under one lock (a PostgreSQL
advisory lock, held until its messages are sent), reads how many messages the queue holds and how many claims are
outstanding, and claims only the room left below the bound; the other due deliveries wait in the database for a
later sweep.

A Redis that restarts without its data (no append-only file) has lost every message it held. The broker keeps a
marker key beside the queue; a queuing that finds it missing (Redis restarted empty, or the first queuing ever)
ends every outstanding claim at once, so the deliveries those messages stood for are queued again by this very
sweep instead of when their claims run out."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import ChannelError

from core.logging import outage_log
from core.redis_guard import broker_guard

from .models import DeliveryStatus, WebhookDelivery
from .queue import DELIVER, FAN_OUT_PENDING, queue
from .sql import ADVISORY_LOCK, ADVISORY_UNLOCK

logger = logging.getLogger("svc.webhooks")

# The advisory lock every queuing of deliveries takes (any fixed number no other lock of the project uses).
QUEUING_LOCK = 2_204_917_311
# How long a requested fan-out keeps others from being requested: the task clears it when it starts, so this only
# matters when its message is lost (beat's sweep fans the events out meanwhile).
FAN_OUT_REQUEST_SECONDS = 60


@contextmanager
def _queuing_lock() -> Iterator[None]:
    """One queuing at a time, so each reads the queue with every earlier one's messages already in it. Not needed
    elsewhere: SQLite takes its write lock for the whole transaction."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(ADVISORY_LOCK, [QUEUING_LOCK])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(ADVISORY_UNLOCK, [QUEUING_LOCK])


def broker_holds_messages() -> bool:
    """False when tasks run in-process (no Redis): a sent task has already run when sending returns."""
    return not current_app.conf.task_always_eager


def broker_marker_key() -> str:
    return f"svc:webhooks:broker-marker:{settings.WEBHOOK_QUEUE}"


def queue_depth(*, marker_checked: list[bool] | None = None) -> int:
    """Messages waiting in the webhook queue (not those a worker has taken: running, prefetched, or held until a
    countdown ends). With `marker_checked`, also sets the broker's marker key if it was missing and appends
    whether it was (the broker lost what it held, or never held anything)."""
    with current_app.connection_or_acquire() as broker:
        channel = broker.default_channel
        if marker_checked is not None:
            client = getattr(channel, "client", None)
            if client is not None:  # a Redis channel
                marker_checked.append(bool(client.set(broker_marker_key(), "1", nx=True)))
        try:
            waiting: int = channel.queue_declare(queue=settings.WEBHOOK_QUEUE, passive=True).message_count
            return waiting
        except ChannelError:
            return 0  # not declared yet (Redis drops an empty queue's list)


def _claims_end(now: datetime) -> int:
    """The broker lost its messages: every claim outstanding stood for one, so none is waited for."""
    ended = WebhookDelivery.objects.filter(queued_until__gt=now).update(queued_until=None)
    if ended:
        logger.warning("webhooks.claims_ended", extra={"count": ended, "reason": "the broker lost its messages"})
    return ended


def claims_outstanding(now: datetime) -> int:
    return WebhookDelivery.objects.filter(queued_until__gt=now).count()


def queue_room(now: datetime) -> int:
    """How many deliveries may be queued now: WEBHOOK_QUEUE_MAX less the larger of what the queue holds (stale
    messages and fan-outs included) and the claims outstanding (those sent but not yet in the queue's count: taken
    by a worker, held for a countdown, lost). None is queued while the broker cannot be read."""
    bound = settings.WEBHOOK_QUEUE_MAX
    if not broker_holds_messages():
        return bound
    guard = broker_guard()
    if not guard.available():
        return 0
    marker_missing: list[bool] = []
    try:
        depth = queue_depth(marker_checked=marker_missing)
    except Exception as error:
        guard.failed()
        outage_log(logger, "webhooks.queue_unreadable", error)
        return 0
    if any(marker_missing):
        _claims_end(now)
    return max(bound - max(depth, claims_outstanding(now)), 0)


# How long a message may take to reach a worker, per message ahead of it: a drain of at least 5 deliveries a second.
CLAIM_SECONDS_PER_MESSAGE = 0.2


def claim_seconds(*, behind: int) -> float:
    """The claim of messages queued behind `behind` others (those already queued, and the batch's own): the time
    such a queue takes to drain at the slowest rate expected, and at least WEBHOOK_RECEIVED_CLAIM_SECONDS, at most
    WEBHOOK_QUEUE_CLAIM_SECONDS. Short in a shallow queue, so a message lost with a worker killed before it could
    cut the claim (webhooks.apps) is queued again within a minute; long in a deep one, so none is queued twice."""
    wait = settings.WEBHOOK_RECEIVED_CLAIM_SECONDS + behind * CLAIM_SECONDS_PER_MESSAGE
    return min(wait, float(settings.WEBHOOK_QUEUE_CLAIM_SECONDS))


def deliveries_queue(
    *, ids: list[int] | None = None, now: datetime | None = None, countdown: float | None = None
) -> list[int]:
    """Claims and queues deliveries that are pending, due (within `countdown` seconds, when the message waits
    that long), not being sent and not queued already: those of `ids`, or any, oldest due first; as many as the
    queue has room for. The others stay for a later sweep. Returns the ids queued."""
    if ids is not None and not ids:
        return []
    now = now or timezone.now()
    due_by = now + timedelta(seconds=countdown or 0)
    candidates = (
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=due_by)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .filter(Q(queued_until__isnull=True) | Q(queued_until__lte=now))
    )
    if ids is not None:
        candidates = candidates.filter(pk__in=ids)
    with _queuing_lock():
        room = queue_room(now)
        if not room:
            return []
        with transaction.atomic():
            claimed = list(
                candidates.select_for_update(skip_locked=True)
                .order_by("next_attempt_at", "pk")
                .values_list("pk", flat=True)[:room]
            )
            claim_until = due_by + timedelta(
                seconds=claim_seconds(behind=settings.WEBHOOK_QUEUE_MAX - room + len(claimed))
            )
            WebhookDelivery.objects.filter(pk__in=claimed).update(queued_until=claim_until)
        unsent = {pk for pk in claimed if not queue(DELIVER, pk, countdown=countdown)}
        if unsent:
            # The broker refused them: a later sweep queues them, without waiting for the claims to run out.
            WebhookDelivery.objects.filter(pk__in=unsent, queued_until=claim_until).update(queued_until=None)
    return [pk for pk in claimed if pk not in unsent]


def claim_received(*, delivery_id: int, eta: datetime | None = None, now: datetime | None = None) -> None:
    """A worker received the delivery's message (to run now, or at `eta`): the claim is cut to
    WEBHOOK_RECEIVED_CLAIM_SECONDS past then. A message waiting in the queue may wait long (its claim is
    WEBHOOK_QUEUE_CLAIM_SECONDS); one a worker holds runs within seconds, unless that worker died holding it, and
    then the sweep queues the delivery again half a minute later rather than when the long claim would run out."""
    now = now or timezone.now()
    start = max(now, eta) if eta is not None else now
    WebhookDelivery.objects.filter(pk=delivery_id, queued_until__isnull=False).update(
        queued_until=start + timedelta(seconds=settings.WEBHOOK_RECEIVED_CLAIM_SECONDS)
    )


def claim_drop(*, delivery_id: int) -> None:
    """A worker took the delivery's message but made no attempt (not due yet, being sent, finished): the claim
    that message held goes, so a sweep queues the delivery once it is due instead of after the claim runs out."""
    WebhookDelivery.objects.filter(pk=delivery_id, queued_until__isnull=False).update(queued_until=None)


def _fan_out_request_key() -> str:
    return f"webhooks:fan-out-requested:{settings.WEBHOOK_QUEUE}"


def fan_out_request() -> None:
    """Asks a worker to fan out the events not fanned out yet (and queue what is due, webhooks.fanout). One
    request waits in the queue at a time, however many events are written meanwhile: its task reads them all."""
    key = _fan_out_request_key()
    if cache.add(key, 1, timeout=FAN_OUT_REQUEST_SECONDS) and not queue(FAN_OUT_PENDING):
        cache.delete(key)


def fan_out_request_taken() -> None:
    """The requested fan-out starts: an event written from now on asks for another."""
    cache.delete(_fan_out_request_key())
