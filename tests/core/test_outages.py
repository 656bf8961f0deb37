"""Outages of Redis, of both kinds, as the request paths meet them: a refused connection and one accepted and never
answered. Every client has a timeout, a process that met a failure skips Redis for a few seconds instead of waiting
on it again (core.redis_guard), the caches answer from memory meanwhile, and the log says it once a minute with a
count (core.logging.outage_log), not once per call."""

import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from config import celery_app
from core import logging as core_logging
from core.counter_cache import FallbackRedisCache, RedisCounterCache
from core.logging import outage_log, outage_totals
from core.redis_guard import redis_guard_for
from core.tasks import enqueue
from webhooks.tasks import webhooks_sweep_task

logger = logging.getLogger("svc.tests")


@pytest.fixture
def hanging_redis() -> Iterator[str]:
    """A port that accepts connections and never answers: a Redis behind a network that drops packets."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


REFUSED = "redis://127.0.0.1:6391/0"  # nothing listens
OPTIONS = {"OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}


class TestOutageLog:
    def test_a_thousand_failures_are_one_line_then_a_line_a_minute_with_the_count(self, caplog, monkeypatch):
        clock = [1000.0]
        monkeypatch.setattr(core_logging.time, "monotonic", lambda: clock[0])
        with caplog.at_level(logging.ERROR, logger="svc.tests"):
            for _ in range(1000):
                outage_log(logger, "tests.broker_down", RedisConnectionError("Error 111 connecting"))
            assert caplog.messages == ["tests.broker_down: ConnectionError: Error 111 connecting"]
            clock[0] += 61
            outage_log(logger, "tests.broker_down", RedisConnectionError("Error 111 connecting"))
        assert (
            caplog.messages[1] == "tests.broker_down: ConnectionError: Error 111 connecting (999 more in the last 60 s)"
        )
        assert all(record.exc_info is None for record in caplog.records), "an outage needs no traceback"
        assert caplog.records[1].count == 1000
        assert outage_totals()["tests.broker_down"] == 1001

    def test_each_kind_is_counted_on_its_own(self, caplog):
        with caplog.at_level(logging.ERROR, logger="svc.tests"):
            outage_log(logger, "tests.one", OSError("down"))
            outage_log(logger, "tests.two", OSError("down"))
            outage_log(logger, "tests.one", OSError("down"))
        assert [message.split(":")[0] for message in caplog.messages] == ["tests.one", "tests.two"]

    def test_a_bug_met_during_an_outage_keeps_its_traceback(self, caplog):
        with caplog.at_level(logging.ERROR, logger="svc.tests"):
            try:
                raise ValueError("not an outage")
            except ValueError as error:
                outage_log(logger, "tests.bug", error)
        assert caplog.records[0].exc_info is not None


class TestCachesDuringAnOutage:
    @pytest.mark.parametrize("kind", ["refused", "hanging"])
    def test_the_default_cache_answers_from_memory_and_waits_once(self, kind, hanging_redis):
        location = REFUSED if kind == "refused" else hanging_redis
        cache = FallbackRedisCache(location, OPTIONS)
        started = time.monotonic()
        assert cache.add("fan-out-requested", 1, timeout=60) is True  # the first call meets the outage
        first = time.monotonic() - started
        started = time.monotonic()
        for n in range(200):
            cache.set(f"key-{n}", n)
        assert cache.add("fan-out-requested", 1, timeout=60) is False  # remembered in this process
        assert cache.get("key-7") == 7
        rest = time.monotonic() - started
        assert first < 1.5, "one timeout at most"
        assert rest < 0.5, "the next calls do not wait on Redis again"

    def test_after_the_skip_the_next_call_tries_redis_again(self, settings, caplog):
        settings.REDIS_FAILURE_SKIP_SECONDS = 0.2
        cache = FallbackRedisCache(REFUSED, OPTIONS)
        guard = redis_guard_for(REFUSED)
        cache.get("a")
        assert not guard.available()
        time.sleep(0.25)
        assert guard.available()

    def test_the_rate_limit_counts_go_on_in_the_process_on_a_hanging_redis(self, hanging_redis):
        cache = RedisCounterCache(hanging_redis, OPTIONS)
        started = time.monotonic()
        assert [cache.count_one("bucket", 65) for _ in range(50)] == list(range(1, 51))
        assert time.monotonic() - started < 1.5

    def test_the_caches_and_the_broker_of_one_redis_share_one_guard(self, hanging_redis):
        FallbackRedisCache(hanging_redis, OPTIONS).get("a")
        assert not redis_guard_for(hanging_redis.replace("/0", "/3")).available()


class TestTasksDuringAnOutage:
    def test_a_hanging_broker_costs_one_send_its_timeout_then_nothing(self, broker_down, hanging_redis, caplog):
        # broker_down points Celery at a closed port with eager mode off; this moves it to the hanging one.
        app = celery_app
        app._pool = None
        app.amqp._producer_pool = None
        app.conf.update(broker_url=hanging_redis)
        with caplog.at_level(logging.ERROR, logger="svc.tasks"):
            started = time.monotonic()
            assert enqueue(webhooks_sweep_task) is False
            first = time.monotonic() - started
            started = time.monotonic()
            assert not any(enqueue(webhooks_sweep_task) for _ in range(100))
            rest = time.monotonic() - started
        assert first < 5, f"the broker's socket timeout bounds the send ({first:.1f} s)"
        assert rest < 0.5
        assert len([m for m in caplog.messages if m.startswith("task.enqueue_failed:")]) == 1

    def test_a_refused_broker_is_logged_once(self, broker_down, caplog):
        with caplog.at_level(logging.ERROR, logger="svc.tasks"):
            results = [enqueue(webhooks_sweep_task) for _ in range(50)]
        assert results == [False] * 50
        assert len([m for m in caplog.messages if m.startswith("task.enqueue_failed:")]) == 1
