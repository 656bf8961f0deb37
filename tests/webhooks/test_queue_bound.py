"""A delivery is queued once, under a claim; the webhook queue never holds more than WEBHOOK_QUEUE_MAX messages
whatever the backlog; webhook tasks have a queue of their own, so the beat jobs on the default queue are not stuck
behind them. Against a real Redis (the queue's length is what is measured); the backlog drains through a real
worker."""

import os
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from commissions.models import Commission
from config import celery_app
from programs.models import Program
from tests.factories import (
    CustomerFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
    WebhookEndpointFactory,
)
from tests.webhook_receiver import Receiver
from tests.webhooks.builders import emit
from tests.worker import celery_worker_running, wait_for, webhook_queue_of
from tracking.reconciler import RECONCILE_GRACE
from tracking.tasks import commissions_reconcile_task
from webhooks.delivery import delivery_attempt
from webhooks.dispatch import broker_marker_key, claim_received, claim_seconds
from webhooks.events import event_new
from webhooks.fanout import event_fan_out, webhooks_sweep
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.tasks import webhook_delivery_attempt_task

pytestmark = [pytest.mark.postgres, pytest.mark.worker]

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass
class Broker:
    client: redis.Redis
    queue: str

    def depth(self) -> int:
        return int(self.client.llen(self.queue))

    def lose_everything(self, *, marker: bool = False) -> None:
        """The broker drops the queue's messages; with `marker`, everything else too (a Redis restarted without
        persistence)."""
        self.client.delete(self.queue)
        if marker:
            self.client.delete(broker_marker_key())


@pytest.fixture
def broker(settings) -> Iterator[Broker]:
    """Tasks are sent to the real Redis (nothing consumes them) on a webhook queue of this test's own."""
    settings.WEBHOOK_QUEUE = f"test-{uuid.uuid4().hex[:8]}-webhooks"
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    try:
        yield Broker(client, settings.WEBHOOK_QUEUE)
    finally:
        celery_app.conf.task_always_eager = previous
        client.delete(settings.WEBHOOK_QUEUE, broker_marker_key())
        client.close()


@pytest.fixture
def program() -> Program:
    return ProgramFactory.create()


def backlog(endpoints: list[WebhookEndpoint], events: int, *, due: datetime | None = None) -> list[WebhookDelivery]:
    """`events` events of the endpoints' program, each with a due delivery to every endpoint, written in bulk (as an
    outage or a slow receiver leaves them)."""
    due = due or timezone.now()
    program_id = endpoints[0].program_id
    assert program_id is not None
    rows = WebhookEvent.objects.bulk_create(
        [
            event_new(program_id=program_id, type="sale.created", livemode=True, data={"n": n}, object_id=n)
            for n in range(events)
        ]
    )
    WebhookEvent.objects.filter(pk__in=[row.pk for row in rows]).update(fanned_out_at=due)
    return WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(event=row, endpoint=endpoint, next_attempt_at=due) for row in rows for endpoint in endpoints],
        batch_size=2000,
    )


@pytest.mark.django_db
class TestClaims:
    def test_a_second_sweep_does_not_queue_what_the_first_queued(self, broker, program):
        backlog([WebhookEndpointFactory(program=program)], 30)

        assert webhooks_sweep() == (0, 30)
        assert broker.depth() == 30
        assert webhooks_sweep() == (0, 0)
        assert webhooks_sweep() == (0, 0)
        assert broker.depth() == 30
        assert not WebhookDelivery.objects.filter(queued_until__isnull=True).exists()

    def test_a_claim_that_ran_out_is_queued_again(self, broker, program, time_machine, settings):
        """The broker lost the messages: the deliveries wait for their claims to run out, then go again."""
        time_machine.move_to(NOW, tick=False)
        backlog([WebhookEndpointFactory(program=program)], 5)
        assert webhooks_sweep() == (0, 5)
        broker.lose_everything()

        claim = claim_seconds(behind=5)  # an empty queue, then these five
        assert claim == settings.WEBHOOK_RECEIVED_CLAIM_SECONDS + 1
        time_machine.move_to(NOW + timedelta(seconds=claim - 1), tick=False)
        assert webhooks_sweep() == (0, 0)
        time_machine.move_to(NOW + timedelta(seconds=claim + 1), tick=False)
        assert webhooks_sweep() == (0, 5)
        assert broker.depth() == 5

    def test_a_claim_lasts_as_long_as_the_queue_ahead_takes_to_drain(self, settings):
        """Short behind a shallow queue (a message a killed worker took is queued again within a minute), long
        behind a deep one (none waiting its turn is queued twice), never past WEBHOOK_QUEUE_CLAIM_SECONDS."""
        received = settings.WEBHOOK_RECEIVED_CLAIM_SECONDS
        assert claim_seconds(behind=1) == received + 0.2
        assert claim_seconds(behind=500) == received + 100
        assert claim_seconds(behind=100_000) == settings.WEBHOOK_QUEUE_CLAIM_SECONDS

    def test_a_redis_back_without_its_data_ends_the_claims_at_once(self, broker, program, time_machine):
        """Restarted without an append-only file, Redis holds nothing: its marker key is gone with the messages,
        and the next sweep queues the deliveries again without waiting for their claims."""
        time_machine.move_to(NOW, tick=False)
        backlog([WebhookEndpointFactory(program=program)], 5)
        assert webhooks_sweep() == (0, 5)
        broker.lose_everything()
        assert webhooks_sweep() == (0, 0), "a queue emptied by workers is no loss"
        broker.lose_everything(marker=True)
        time_machine.move_to(NOW + timedelta(seconds=2), tick=False)
        assert webhooks_sweep() == (0, 5)
        assert broker.depth() == 5

    def test_a_worker_receiving_the_message_cuts_the_claim_to_half_a_minute_past_its_run(
        self, broker, program, time_machine, settings
    ):
        """A worker killed holding prefetched messages leaves them to the sweep half a minute later, not after
        the claim a message waiting in a deep queue needs."""
        time_machine.move_to(NOW, tick=False)
        first, second = backlog([WebhookEndpointFactory(program=program)], 2)
        assert webhooks_sweep() == (0, 2)
        claimed = NOW + timedelta(seconds=claim_seconds(behind=2))
        assert set(WebhookDelivery.objects.values_list("queued_until", flat=True)) == {claimed}

        claim_received(delivery_id=first.pk)
        claim_received(delivery_id=second.pk, eta=NOW + timedelta(seconds=20))
        first.refresh_from_db()
        second.refresh_from_db()
        assert first.queued_until == NOW + timedelta(seconds=settings.WEBHOOK_RECEIVED_CLAIM_SECONDS)
        assert second.queued_until == NOW + timedelta(seconds=20 + settings.WEBHOOK_RECEIVED_CLAIM_SECONDS)

        broker.lose_everything()  # the worker that held them died
        time_machine.move_to(NOW + timedelta(seconds=settings.WEBHOOK_RECEIVED_CLAIM_SECONDS + 1), tick=False)
        assert webhooks_sweep() == (0, 1)

    def test_the_worker_taking_the_message_ends_the_claim(self, broker, receiver, program):
        endpoint = WebhookEndpointFactory(program=program, url=receiver.url)
        (delivery,) = backlog([endpoint], 1)
        assert webhooks_sweep() == (0, 1)

        assert delivery_attempt(delivery_id=delivery.pk) is not None
        delivery.refresh_from_db()
        assert (delivery.status, delivery.queued_until, delivery.attempts) == ("succeeded", None, 1)

    def test_a_message_that_finds_nothing_to_do_ends_the_claim(self, broker, program):
        """Not due any more (or being sent, or finished): the claim goes, so a sweep queues it once it is due."""
        (delivery,) = backlog([WebhookEndpointFactory(program=program)], 1)
        assert webhooks_sweep() == (0, 1)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=5))

        assert delivery_attempt(delivery_id=delivery.pk) is None
        delivery.refresh_from_db()
        assert delivery.queued_until is None and delivery.attempts == 0

    def test_a_retry_soon_is_queued_under_a_claim_that_outlasts_its_countdown(self, broker, program, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
        endpoint = WebhookEndpointFactory(program=program, url="http://127.0.0.1:9/closed")  # nothing listens
        (delivery,) = backlog([endpoint], 1)

        assert delivery_attempt(delivery_id=delivery.pk) is not None  # failed: retried in about 5 s
        delivery.refresh_from_db()
        assert delivery.status == "pending" and delivery.next_attempt_at is not None
        assert delivery.queued_until is not None and delivery.queued_until > delivery.next_attempt_at
        assert broker.depth() == 1
        assert webhooks_sweep(now=delivery.next_attempt_at) == (0, 0), "queued already"
        assert broker.depth() == 1


@pytest.mark.django_db
class TestBound:
    def test_a_sweep_queues_only_the_room_left_and_the_rest_waits(self, broker, program, settings):
        settings.WEBHOOK_QUEUE_MAX = 40
        backlog([WebhookEndpointFactory(program=program)], 100)

        assert webhooks_sweep() == (0, 40)
        assert webhooks_sweep() == (0, 0)
        assert broker.depth() == 40
        # Lost messages keep their claims until they run out: they still count.
        broker.lose_everything()
        assert webhooks_sweep() == (0, 0)
        assert WebhookDelivery.objects.filter(queued_until__isnull=True).count() == 60

    def test_what_the_queue_already_holds_counts(self, broker, program, settings):
        """Messages no claim accounts for (a fan-out, a message queued again after its claim ran out) take room."""
        settings.WEBHOOK_QUEUE_MAX = 40
        backlog([WebhookEndpointFactory(program=program)], 100)
        broker.client.lpush(broker.queue, *[b"{}"] * 35)

        assert webhooks_sweep() == (0, 5)
        assert broker.depth() == 40

    def test_a_fan_out_with_the_queue_full_leaves_its_deliveries_to_the_sweep(
        self, broker, program, settings, django_capture_on_commit_callbacks
    ):
        settings.WEBHOOK_QUEUE_MAX = 10
        endpoint = WebhookEndpointFactory(program=program)
        backlog([endpoint], 10)
        assert webhooks_sweep() == (0, 10)

        event = emit(program)
        with django_capture_on_commit_callbacks(execute=True):
            event_fan_out(event_id=event.pk)
        assert broker.depth() == 10
        delivery = WebhookDelivery.objects.get(event=event)
        assert delivery.status == "pending" and delivery.queued_until is None

    def test_nothing_is_claimed_while_the_broker_is_unreachable(self, broker, program, broker_down, caplog):
        backlog([WebhookEndpointFactory(program=program)], 3)
        assert webhooks_sweep() == (0, 0)
        assert not WebhookDelivery.objects.filter(queued_until__isnull=False).exists()
        assert any(message.startswith("webhooks.queue_unreadable:") for message in caplog.messages)


@pytest.mark.django_db
def test_webhook_tasks_go_to_the_webhook_queue_and_beat_jobs_to_the_default_one(broker, settings):
    default_queue = f"test-{uuid.uuid4().hex[:8]}"
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = default_queue
    try:
        webhook_delivery_attempt_task.apply_async(args=(0,))
        commissions_reconcile_task.apply_async()
        assert (broker.depth(), broker.client.llen(default_queue)) == (1, 1)
    finally:
        celery_app.conf.task_default_queue = previous
        broker.client.delete(default_queue)
    assert django_settings.CELERY_TASK_ROUTES == ["webhooks.queue.task_route"]


# To two endpoints: 3,000 deliveries, three times the queue's default bound (WEBHOOK_QUEUE_MAX, 1,000), so the queue
# fills to its bound and the reconciler's job is sent while more than a queueful still waits. bench/webhook_soak.py
# drains larger backlogs.
BACKLOG_EVENTS = 1_500


@pytest.fixture
def worker_on_both_queues(transactional_db, monkeypatch) -> Iterator[str]:
    """A real worker (two processes) consuming a default queue of its own and the webhook queue that goes with it;
    this process sends to them. Yields the webhook queue."""
    # The worker is another process: it reads its settings from the environment; the receiver is on loopback.
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_URLS", "true")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    database = connection.settings_dict
    database_url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_default_queue)
    with (
        celery_worker_running(queue=queue, database_url=database_url, redis_url=os.environ["REDIS_URL"], concurrency=2),
        override_settings(WEBHOOK_QUEUE=webhook_queue_of(queue), WEBHOOK_ALLOW_PRIVATE_URLS=True),
    ):
        celery_app.conf.task_always_eager = False
        celery_app.conf.task_default_queue = queue
        try:
            yield webhook_queue_of(queue)
        finally:
            celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = previous


def test_a_backlog_of_three_queuefuls_drains_through_the_bounded_queue_once_each_while_the_reconciler_runs(
    receiver: Receiver, worker_on_both_queues: str
):
    """Default settings (retry schedule, WEBHOOK_QUEUE_MAX) and beat's cadence: the sweep every
    WEBHOOK_SWEEP_SECONDS while a real worker drains the queue."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    program = ProgramFactory.create(hold_days=30)
    endpoints = [WebhookEndpointFactory.create(program=program, url=f"{receiver.url}/{name}") for name in ("a", "b")]
    backlog(endpoints, BACKLOG_EVENTS)
    deliveries = 2 * BACKLOG_EVENTS
    # A sale whose request died before its commission: the reconciler's job, sent while the backlog is queued. In a
    # program of its own, so its commission's event adds no delivery.
    stored_at = timezone.now() - RECONCILE_GRACE - timedelta(minutes=1)
    customer = CustomerFactory(link=ReferralLinkFactory(program=ProgramFactory(hold_days=30)), customer_key="user_1")
    orphan = SaleFactory.create(customer=customer, created_at=stored_at, sale_date=stored_at)
    bound = django_settings.WEBHOOK_QUEUE_MAX

    depths: list[int] = []
    reconciled_after: float | None = None
    pending_when_reconciled = 0
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        webhooks_sweep()
        depths.append(client.llen(worker_on_both_queues))
        if reconciled_after is None and depths[-1] >= bound // 2:
            sent_at = time.monotonic()
            commissions_reconcile_task.delay()
            assert wait_for(lambda: Commission.objects.filter(sale=orphan).exists(), timeout=30)
            reconciled_after = time.monotonic() - sent_at
            pending_when_reconciled = WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING).count()
        if not WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING).exists():
            break
        for _ in range(int(django_settings.WEBHOOK_SWEEP_SECONDS / 0.25)):
            depths.append(client.llen(worker_on_both_queues))
            time.sleep(0.25)

    print(f"webhook queue depth: max {max(depths)} of {len(depths)} samples; reconciled in {reconciled_after} s")
    assert max(depths) <= bound
    assert max(depths) >= bound // 2, "the backlog filled the queue up to its bound"
    assert reconciled_after is not None and reconciled_after < 10
    assert pending_when_reconciled > bound, "the reconciler ran while the backlog was still draining"
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.SUCCEEDED).count() == deliveries
    assert WebhookAttempt.objects.count() == deliveries
    received = Counter((request.path, request.webhook_id) for request in list(receiver.requests))
    assert len(received) == deliveries and set(received.values()) == {1}, "each delivery attempted once"
    client.close()
