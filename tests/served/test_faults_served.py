"""Faults as deployed: gunicorn (3 workers), a real Celery worker (prefork, 2 processes) and beat, all on a Redis
of the test's own reached through a proxy, and a receiver that records when each webhook arrived. Sales and clicks
flow over HTTP the whole time while, in turn:

1. Redis is stopped for FAULT_SECONDS (killed, and started again without its data, as a Redis without an
   append-only file comes back: every message it held is gone);
2. Redis hangs for FAULT_SECONDS (the proxy accepts connections and never answers, new ones or open ones);
3. the worker, its pool processes with it, is killed with SIGKILL while deliveries are out, and started again.

Then: every request answered in time and none with a 5xx; every webhook event delivered within a minute of the
last fault's end; every request the receiver saw on record as an attempt, none left in flight; the pool processes
never killed by a stale time limit; each kind of failure logged a few lines a minute, not once per event; and
verify_integrity passes."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.management import call_command

from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, WebhookEndpointFactory
from tests.fault_proxy import FaultProxy
from tests.gunicorn import BASE_DIR, gunicorn_serving
from tests.redis_server import RedisServer
from tests.webhook_receiver import Reply, receiving
from tests.worker import wait_for, webhook_queue_of
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEvent

from .conftest import webhooks_env

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Each outage's length; the drill is a minute each (shorter for a quick local run).
FAULT_SECONDS = float(os.environ.get("FAULT_TEST_SECONDS", "60"))
# What "on time" means: every event is at its receiver this long after the last fault ended, at the latest.
DELIVERED_WITHIN_SECONDS = 60
# A request's budget: the Redis clients' timeouts (0.5 s for the caches, 2 s for the broker) and its own work.
REQUEST_SECONDS = 4.0
SALES_PER_SECOND = 1.0


@dataclass
class Traffic:
    """Sales and clicks sent one after another until stopped; each answer's status and time."""

    url: str
    key: str
    link_code: str
    answers: list[tuple[float, str, int, float]] = field(default_factory=list)  # (sent at, path, status, seconds)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=15) as client:
            sent = 0
            while not self.stop.is_set():
                started = time.monotonic()
                self._send(
                    client,
                    "/api/v1/track/sale",
                    {"transaction_id": f"txn-{uuid.uuid4().hex[:12]}", "amount_cents": 10000, "customer_key": "buyer"},
                )
                self._send(client, "/api/v1/track/click", {"affiliate_url": f"https://shop.test/?aff={self.link_code}"})
                sent += 1
                self.stop.wait(max(0.0, 1 / SALES_PER_SECOND - (time.monotonic() - started)))

    def _send(self, client: httpx.Client, path: str, body: dict[str, Any]) -> None:
        at = time.time()
        started = time.monotonic()
        try:
            response = client.post(path, json=body, headers={"Authorization": f"Bearer {self.key}"})
            self.answers.append((at, path, response.status_code, time.monotonic() - started))
        except httpx.HTTPError as error:
            self.errors.append(f"{path}: {type(error).__name__}: {error}")


@dataclass
class Processes:
    """The worker and beat, each in a process group of its own (so a kill takes the pool processes too)."""

    env: dict[str, str]
    directory: Path
    worker: subprocess.Popen[bytes] | None = None
    beat: subprocess.Popen[bytes] | None = None
    worker_logs: list[Path] = field(default_factory=list)

    def start_worker(self) -> None:
        log = self.directory / f"worker-{len(self.worker_logs)}.log"
        self.worker_logs.append(log)
        queue = self.env["CELERY_QUEUE"]
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency", "2"]
        command += ["-Q", f"{queue},{webhook_queue_of(queue)}", "-n", f"{queue}-{len(self.worker_logs)}@%h"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"]
        self.worker = self._spawn(command, log)

    def start_beat(self) -> None:
        schedule = self.directory / "beat-schedule"
        command = [sys.executable, "-m", "celery", "-A", "config", "beat", "-s", str(schedule), "-l", "INFO"]
        self.beat = self._spawn(command + ["--pidfile", ""], self.directory / "beat.log")

    def _spawn(self, command: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("w") as output:
            return subprocess.Popen(
                command, cwd=BASE_DIR, env=self.env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
            )

    def kill_worker(self) -> None:
        assert self.worker is not None
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait()

    def stop(self) -> None:
        for process in (self.worker, self.beat):
            if process is not None and process.poll() is None:
                with_group = process.pid
                os.killpg(with_group, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(with_group, signal.SIGKILL)
                    process.wait()


@contextmanager
def traffic_running(traffic: Traffic) -> Iterator[Traffic]:
    thread = threading.Thread(target=traffic.run, daemon=True)
    thread.start()
    try:
        yield traffic
    finally:
        traffic.stop.set()
        thread.join(timeout=30)


def _restart_without_data(redis: RedisServer) -> None:
    redis.kill()
    for stale in redis.directory.rglob("*.aof*"):
        if stale.is_file():
            stale.unlink()
    redis.start()


def _first_arrivals(receiver) -> dict[str, float]:
    arrivals: dict[str, float] = {}
    for request in list(receiver.requests):
        arrivals.setdefault(request.webhook_id, request.received_at)
    return arrivals


# A log line that reports a failure, and what kind it is: the logger's event name for the service's own lines
# ("task.enqueue_failed: ..."), the first words of the message for celery's and kombu's.
FAILURE_LINE = re.compile(r"\b(ERROR|WARNING|CRITICAL)\b[/\]:]?\s*(?:\S+\s+\[[^\]]*\]\s+)?(?P<text>.*)")


def _failure_kind(text: str) -> str:
    own = re.match(r"([a-z_]+\.[a-z_]+):", text)
    if own:
        return own.group(1)
    return " ".join(re.sub(r"[^A-Za-z ]", " ", text).split()[:4])


def _failure_lines(logs: list[Path]) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            match = FAILURE_LINE.search(line)
            if match:
                kinds[_failure_kind(match.group("text"))] += 1
    return kinds


def _stuck(redis: RedisServer, queue: str) -> dict[str, Any]:
    """What a test that failed to see every event delivered reports."""
    stuck = WebhookDelivery.objects.exclude(status=DeliveryStatus.SUCCEEDED)
    return {
        "now": time.time(),
        "webhook queue depth": redis.client.llen(webhook_queue_of(queue)),
        "unacked": redis.client.hlen("unacked"),
        "claims": WebhookDelivery.objects.filter(queued_until__isnull=False).count(),
        "stuck": list(
            stuck.values_list(
                "pk", "status", "attempts", "last_error", "next_attempt_at", "queued_until", "leased_until"
            )[:5]
        ),
        "their attempts": list(
            WebhookAttempt.objects.filter(delivery__in=stuck[:5]).values_list(
                "delivery_id", "number", "in_flight", "started_at", "error"
            )
        ),
    }


def test_webhooks_arrive_within_a_minute_of_any_fault_and_every_attempt_is_on_record(tmp_path):
    redis = RedisServer(tmp_path / "redis")
    redis.directory.mkdir()
    redis.start()
    proxy = FaultProxy(redis.port)
    proxy.start()

    program = ProgramFactory.create(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    CustomerFactory(link=link, customer_key="buyer")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        **webhooks_env(redis_url=proxy.url, queue=queue),
        "LOG_LEVEL": "INFO",
        "REQUEST_LOG_BATCH": "1",
    }
    processes = Processes(env=env, directory=tmp_path)
    gunicorn_log = tmp_path / "gunicorn.log"
    try:
        with (
            receiving(Reply(delay=0.05)) as receiver,
            gunicorn_serving(env={**env, "LOG_LEVEL": "INFO"}, log=gunicorn_log, workers=3) as url,
        ):
            endpoint = WebhookEndpointFactory(program=program, url=receiver.url, event_types=["*"])
            processes.start_worker()
            processes.start_beat()
            traffic = Traffic(url=url, key=program.raw_api_key, link_code=link.short_link)
            with traffic_running(traffic):
                assert wait_for(lambda: len(receiver.requests) >= 6, timeout=60), "webhooks flow before the faults"

                redis.kill()  # 1. stopped: refused at once
                proxy.refuse()
                time.sleep(FAULT_SECONDS)
                _restart_without_data(redis)
                proxy.forward()
                time.sleep(5)

                proxy.hang()  # 2. hanging: accepted, never answered
                time.sleep(FAULT_SECONDS)
                proxy.forward()
                time.sleep(10)

                # 3. the worker killed while deliveries are out (each takes the receiver 0.05 s)
                assert wait_for(
                    lambda: WebhookAttempt.objects.filter(in_flight=True).exists(), timeout=30, interval=0.02
                )
                processes.kill_worker()
                time.sleep(3)
                processes.start_worker()
                last_fault_ended = time.time()
                time.sleep(5)
            traffic_ended = time.time()

            # Every event is delivered within the minute after the last fault ended.
            def all_delivered() -> bool:
                pending = WebhookDelivery.objects.exclude(status=DeliveryStatus.SUCCEEDED).count()
                fanned = not WebhookEvent.objects.filter(fanned_out_at__isnull=True).exists()
                return fanned and pending == 0

            assert wait_for(all_delivered, timeout=traffic_ended - last_fault_ended + DELIVERED_WITHIN_SECONDS + 5), (
                Counter(WebhookDelivery.objects.values_list("status", flat=True)),
                WebhookEvent.objects.filter(fanned_out_at__isnull=True).count(),
                _stuck(redis, queue),
            )
            events = {event.public_id: event for event in WebhookEvent.objects.filter(program=program)}
            arrivals = _first_arrivals(receiver)
            assert set(arrivals) == set(events), "every event reached the receiver"
            late = {
                public_id: round(arrivals[public_id] - max(event.created_at.timestamp(), last_fault_ended), 1)
                for public_id, event in events.items()
                if arrivals[public_id] - max(event.created_at.timestamp(), last_fault_ended) > DELIVERED_WITHIN_SECONDS
            }
            assert not late, f"seconds past the minute: {late}"
            waits = sorted(
                arrivals[public_id] - max(event.created_at.timestamp(), last_fault_ended)
                for public_id, event in events.items()
            )
            median = waits[len(waits) // 2]
            print(
                f"\nfaults: {len(events)} events; after the last fault slowest {waits[-1]:.1f} s, median {median:.1f} s"
            )

            # Every request the receiver saw is an attempt on record (the same webhook-id each time); none is
            # left in flight, and one whose worker died says its outcome is unknown.
            seen = Counter(receiver.ids())
            attempts_of = defaultdict(int)
            for public_id in WebhookAttempt.objects.filter(delivery__endpoint=endpoint).values_list(
                "delivery__event__public_id", flat=True
            ):
                attempts_of[public_id] += 1
            unrecorded = {public_id: (count, attempts_of[public_id]) for public_id, count in seen.items()}
            assert not {k: v for k, v in unrecorded.items() if v[0] > v[1]}, "requests with no attempt on record"
            assert not WebhookAttempt.objects.filter(in_flight=True).exists()
            assert WebhookAttempt.objects.filter(error__startswith="outcome unknown").exists()

            # No request waited past its budget, none failed.
            statuses = Counter(status for _, _, status, _ in traffic.answers)
            assert not traffic.errors, traffic.errors[:5]
            assert all(status < 500 for status in statuses), statuses
            slowest = max(seconds for *_, seconds in traffic.answers)
            assert slowest < REQUEST_SECONDS, f"a request took {slowest:.2f} s"
            print(f"requests: {statuses}, slowest {slowest:.2f} s")

        # No pool process was killed by a time limit meant for a task that had finished.
        worker_text = "\n".join(log.read_text(errors="replace") for log in processes.worker_logs)
        assert not re.search(r"Process 'ForkPoolWorker-\d+' pid:\d+ exited with 'exitcode 1'", worker_text)
        assert not WebhookAttempt.objects.filter(error__startswith="timed out").exists()

        # Each kind of failure is logged a few lines a minute (one per process and minute at most for the
        # service's own), not once per event.
        minutes = (2 * FAULT_SECONDS + 60) / 60
        processes_count = 3 + 3 * 2 + 1  # gunicorn workers, two worker runs' parents and pools, beat
        kinds = _failure_lines([gunicorn_log, tmp_path / "beat.log", *processes.worker_logs])
        print(f"failure lines by kind: {kinds.most_common(12)}")
        flooding = {kind: count for kind, count in kinds.items() if count > processes_count * (minutes + 1)}
        assert not flooding, (flooding, kinds.most_common(10))

        processes.stop()
        call_command("verify_integrity")
    finally:
        processes.stop()
        proxy.stop()
        redis.kill()
