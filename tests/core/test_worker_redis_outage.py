"""Crosses processes: a real Celery worker on a Redis of its own outlives Redis going away, again and again, while
it holds messages (waiting for their countdown, so still unacknowledged), and every task queued is done soon after
Redis is back. Before core/broker.py the worker died in about one outage in four, restoring those messages
(`Unrecoverable error: AttributeError("'NoneType' object has no attribute 'hostname'")`), and when it lived, the
messages it could not restore waited in Redis for kombu's visibility timeout, an hour."""

import json
import random
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from django.db import connection

from commissions.models import Notification, NotificationOutbox
from commissions.tasks import notification_outbox_deliver_task
from config import celery_app
from tests.factories import CommissionFactory
from tests.redis_server import RedisServer
from tests.worker import celery_worker_running, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

OUTAGES = 4
TASKS_PER_OUTAGE = 6
# The worker holds a task sent with a countdown, unacknowledged, until it is due: long enough to outlast an outage
# (two kills, each followed by the worker's reconnect, 2 s after it noticed).
HOLD_SECONDS = 8


def use_broker(url: str) -> None:
    # Celery keeps its connection and producer pools for the life of the app; dropping them makes the next publish
    # or ping connect afresh (the pooled connections died with the server). The stubs leave both out.
    app: Any = celery_app
    app._pool = None
    app.amqp._producer_pool = None
    celery_app.conf.update(broker_url=url)


def holds(server: RedisServer, task_ids: set[str], since: float) -> bool:
    """The worker holds the messages of all these tasks, unacknowledged, each taken from the queue after `since`.
    kombu records a message it takes in Redis (the "unacked" hash, with the time in "unacked_index"): one taken but
    not yet recorded would be lost with Redis, a window of kombu's own that this test does not probe."""
    index: Any = server.client.zrange("unacked_index", 0, -1, withscores=True)  # [(tag, time taken)]
    taken_at = dict(index)
    held = {
        json.loads(raw)[0]["headers"]["id"]
        for tag, raw in server.client.hgetall("unacked").items()
        if taken_at.get(tag, 0) > since
    }
    return task_ids <= held


@pytest.fixture
def broker_on(own_redis: RedisServer) -> Iterator[RedisServer]:
    previous = (celery_app.conf.broker_url, celery_app.conf.task_always_eager, celery_app.conf.task_default_queue)
    use_broker(own_redis.url)
    celery_app.conf.task_always_eager = False
    yield own_redis
    use_broker(previous[0])
    celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = previous[1:]


def test_the_worker_outlives_redis_outages_while_holding_messages_and_runs_every_task(broker_on):
    server = broker_on
    queue = f"test-{random.getrandbits(32):08x}"
    celery_app.conf.task_default_queue = queue
    commission = CommissionFactory()
    rows = [
        NotificationOutbox.objects.create(commission=commission, refund_step=step, was_paid_out=False, reversed=False)
        for step in range(1, OUTAGES * TASKS_PER_OUTAGE + 1)
    ]
    database = connection.settings_dict
    database_url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"

    with celery_worker_running(queue=queue, database_url=database_url, redis_url=server.url) as worker:
        for outage in range(OUTAGES):
            use_broker(server.url)
            batch = rows[outage * TASKS_PER_OUTAGE : (outage + 1) * TASKS_PER_OUTAGE]
            sent_at = time.time()
            task_ids = {
                notification_outbox_deliver_task.apply_async(args=(row.pk,), countdown=HOLD_SECONDS).id for row in batch
            }
            assert wait_for(partial(holds, server, task_ids, sent_at), timeout=10)
            server.kill()
            time.sleep(0.5)
            back_at = time.time()
            server.start()
            # Gone again as soon as the worker has reconnected and taken back what it held, then back for good.
            assert wait_for(partial(holds, server, task_ids, back_at), timeout=10), (
                f"outage {outage + 1}: the worker took nothing back (exit code {worker.poll()})"
            )
            server.kill()
            time.sleep(0.5)
            server.start()
            time.sleep(0.5)
            assert worker.poll() is None, f"the worker exited (code {worker.returncode}) in outage {outage + 1}"

        # Every task ran once, within seconds of Redis being back for good (the last ones fall due meanwhile).
        assert wait_for(lambda: not NotificationOutbox.objects.filter(delivered_at=None).exists(), timeout=20), [
            row.pk for row in NotificationOutbox.objects.filter(delivered_at=None)
        ]
        assert Notification.objects.filter(commission=commission).count() == len(rows)
        assert worker.poll() is None
