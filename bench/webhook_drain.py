"""How fast one worker process drains a webhook backlog, run by hand (not by the test suite): the figure of
docs/webhooks.md ("How fast a backlog drains").

    .venv/bin/python bench/webhook_drain.py            # 4 rounds, 5 to 10 minutes in all (make bench-webhooks)

Everything on 127.0.0.1, as bench/webhook_soak.py sets it up: a fresh PostgreSQL database (svc_bench_drain, dropped,
created and migrated), a Redis of its own on a free port, and a receiver in this process (a ThreadingHTTPServer that
answers 200 after the round's delay). One program with one endpoint (webhooks.services.endpoint_create, its secret
encrypted under the SECRET_KEY the worker is given too) pointed at the receiver.

Each round, for a receiver answering in 0, 10, 50 and 250 ms: N sale.created events and a due delivery of each are
written in bulk (as tests/webhooks/test_queue_bound.py's backlog() does: what an outage leaves), then a Celery worker
is started with one pool process (`celery -A config worker -Q celery,webhooks --concurrency 1`, the pool of
CELERY_WORKER_POOL, prefork, as `make worker` runs it), and this process sends webhooks.sweep every
DRAIN_SWEEP_SECONDS (as beat does every WEBHOOK_SWEEP_SECONDS; each sweep queues up to WEBHOOK_QUEUE_MAX) until every
delivery of the round has succeeded; the worker is stopped. The time is from the round's first attempt
(WebhookAttempt.started_at) to its last success (WebhookDelivery.delivered_at): the worker's boot is not in it; the
sweeps it runs between deliveries are, as in production.

Reports (stdout and bench/results/webhook_drain.json): per round the delay, deliveries, seconds, deliveries a second
of the one process, and the time per delivery beyond the receiver's delay (the service's own work), split into the
HTTP request as each attempt logged it (latency_ms) and the delivery task's run in the pool process (the worker's
log), the rest being between tasks; the load average before and after each round. Exits 1 if a round did not
finish within its time or a delivery arrived twice.

Environment: DRAIN_DELIVERIES (N of every round; default 1000, and 300 for the 250 ms receiver), DRAIN_DELAYS_MS
(0,10,50,250), DRAIN_SWEEP_SECONDS (1), DRAIN_KEEP_LOGS (true keeps the worker's logs)."""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # config, tests.factories and the apps, imported once the database is migrated
RESULTS = ROOT / "bench" / "results"
DB_NAME = "svc_bench_drain"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"

DELAYS_MS = [int(ms) for ms in (os.environ.get("DRAIN_DELAYS_MS") or "0,10,50,250").split(",")]
SWEEP_SECONDS = float(os.environ.get("DRAIN_SWEEP_SECONDS") or 1)


def deliveries_for(delay_ms: int) -> int:
    configured = os.environ.get("DRAIN_DELIVERIES")
    if configured:
        return int(configured)
    return 300 if delay_ms >= 250 else 1000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def log(message: str) -> None:
    print(f"{datetime.now(UTC):%H:%M:%S} {message}", flush=True)


class Receiver:
    """Answers 200 to every POST after `delay` seconds and records (webhook-id, arrival time)."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.received: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                arrived = time.time()
                if receiver.delay:
                    time.sleep(receiver.delay)
                with receiver._lock:
                    receiver.received.append((self.headers.get("webhook-id", ""), arrived))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self) -> list[tuple[str, float]]:
        with self._lock:
            received, self.received = self.received, []
        return received


def recreate_database() -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB_NAME)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))


def run_checked(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{command[:3]} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def endpoint_seed(receiver_port: int) -> tuple[int, int]:
    """One program and one endpoint for sale.created at the receiver: (program id, endpoint id)."""
    from tests.factories import ProgramFactory
    from webhooks.services import endpoint_create

    program = ProgramFactory.create()
    made = endpoint_create(
        workspace_id=program.workspace_id,
        program_id=program.pk,
        url=f"http://127.0.0.1:{receiver_port}/drain",
        event_types=["sale.created"],
    )
    return program.pk, made.endpoint.pk


def backlog_write(*, program_id: int, endpoint_id: int, events: int, round_name: str) -> list[int]:
    """`events` events of the program, each with a due delivery to the endpoint, written in bulk (as
    tests/webhooks/test_queue_bound.py's backlog() does). Returns the deliveries' ids."""
    from django.utils import timezone

    from webhooks.events import event_new
    from webhooks.models import WebhookDelivery, WebhookEvent

    due = timezone.now()
    rows = WebhookEvent.objects.bulk_create(
        [
            event_new(
                program_id=program_id,
                type="sale.created",
                livemode=True,
                data={"round": round_name, "n": n},
                object_id=n,
            )
            for n in range(events)
        ]
    )
    WebhookEvent.objects.filter(pk__in=[row.pk for row in rows]).update(fanned_out_at=due)
    deliveries = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(event=row, endpoint_id=endpoint_id, next_attempt_at=due) for row in rows], batch_size=2000
    )
    return [delivery.pk for delivery in deliveries]


def round_counts(ids: list[int]) -> dict[str, Any]:
    """The round's deliveries by status, its attempts, the first attempt's start and the last success."""
    from django.db.models import Avg, Count, Max, Min

    from webhooks.models import WebhookAttempt, WebhookDelivery

    # The round's rows are the only ones in their id range (written by one bulk insert, nothing else writes).
    deliveries = WebhookDelivery.objects.filter(pk__gte=min(ids), pk__lte=max(ids))
    by_status = {row["status"]: row["n"] for row in deliveries.order_by().values("status").annotate(n=Count("pk"))}
    attempts = WebhookAttempt.objects.filter(delivery_id__gte=min(ids), delivery_id__lte=max(ids))
    first = attempts.aggregate(first=Min("started_at"))["first"]
    last = deliveries.aggregate(last=Max("delivered_at"))["last"]
    request_ms = attempts.aggregate(mean=Avg("latency_ms"))["mean"]
    return {
        "by_status": by_status,
        "attempts": attempts.count(),
        "first_attempt": first,
        "last_delivered": last,
        "request_ms_mean": request_ms,
    }


def task_seconds(worker_log: Path, task: str) -> list[float]:
    """How long each run of `task` took in the pool process, from the worker's log ("succeeded in 0.05s")."""
    pattern = re.compile(rf"Task {re.escape(task)}\[[^\]]+\] succeeded in ([0-9.]+)s")
    return [float(m) for m in pattern.findall(worker_log.read_text())]


def worker_start(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "celery,webhooks",
            "--concurrency",
            "1",
            "-l",
            "INFO",
        ],
        cwd=ROOT,
        env={**env, "LOG_LEVEL": "INFO"},
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )


def process_stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="webhook-drain-"))
    redis_port = free_port()
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    redis_process = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=(work / "redis.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    receiver = Receiver()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": DATABASE_URL,
        "REDIS_URL": redis_url,
        "DEBUG": "false",
        # Shared by this process, which encrypts the endpoint's secret, and the worker, which decrypts it to sign.
        "SECRET_KEY": "drain-" + secrets.token_hex(16),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "FAST_PASSWORD_HASHER": "true",
        "LOG_LEVEL": "WARNING",
    }
    for name in ("CELERY_QUEUE", "CELERY_WEBHOOK_QUEUE"):
        env.pop(name, None)
    os.environ.update(env)
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(),
        "cpus": os.cpu_count(),
        "worker": "celery -A config worker -Q celery,webhooks --concurrency 1 (CELERY_WORKER_POOL, prefork)",
        "sweep_every_seconds": SWEEP_SECONDS,
        "load_average_before": os.getloadavg(),
        "rounds": [],
    }
    worker: subprocess.Popen[bytes] | None = None
    ok = True
    try:
        log(f"database {DB_NAME}, redis :{redis_port}, receiver :{receiver.port}")
        recreate_database()
        run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env)
        import django

        django.setup()
        from django.conf import settings
        from django.db import close_old_connections

        from config import celery_app
        from webhooks.tasks import webhooks_sweep_task

        assert not celery_app.conf.task_always_eager

        report["webhook_queue_max"] = settings.WEBHOOK_QUEUE_MAX
        program_id, endpoint_id = endpoint_seed(receiver.port)
        for delay_ms in DELAYS_MS:
            events = deliveries_for(delay_ms)
            round_name = f"{delay_ms}ms"
            receiver.delay = delay_ms / 1000
            receiver.take()
            ids = backlog_write(program_id=program_id, endpoint_id=endpoint_id, events=events, round_name=round_name)
            load_before = os.getloadavg()
            log(f"{round_name}: {events} deliveries due; starting the worker (load {load_before[0]:.2f})")
            worker_log = work / f"worker-{round_name}.log"
            worker = worker_start(env, worker_log)
            # Ample: ten times the time at the documented 15 ms of the service's own work, plus the boot.
            deadline = time.monotonic() + 60 + 10 * events * (delay_ms + 15) / 1000
            finished = False
            next_sweep = time.monotonic()
            while time.monotonic() < deadline:
                if worker.poll() is not None:
                    break
                if time.monotonic() >= next_sweep:
                    webhooks_sweep_task.delay()
                    next_sweep += SWEEP_SECONDS
                counts = round_counts(ids)
                if counts["by_status"].get("succeeded", 0) == events:
                    finished = True
                    break
                time.sleep(0.25)
            close_old_connections()
            counts = round_counts(ids)
            process_stop(worker)
            worker = None
            load_after = os.getloadavg()
            received = receiver.take()
            twice = sum(1 for n in Counter(webhook_id for webhook_id, _ in received).values() if n > 1)
            seconds = None
            if finished and counts["first_attempt"] and counts["last_delivered"]:
                seconds = (counts["last_delivered"] - counts["first_attempt"]).total_seconds()
            arrivals = [at for _, at in received]
            deliver_runs = task_seconds(worker_log, "webhooks.deliver")
            sweep_runs = task_seconds(worker_log, "webhooks.sweep")
            result = {
                "delay_ms": delay_ms,
                "deliveries": events,
                "finished": finished,
                "seconds": round(seconds, 2) if seconds is not None else None,
                "deliveries_per_second": round(events / seconds, 1) if seconds else None,
                "own_ms_per_delivery": round(1000 * seconds / events - delay_ms, 1) if seconds else None,
                # Where the time goes: the HTTP request as the attempt logged it, the whole task in the pool
                # process (the request included), the sweeps it ran meanwhile; the rest is between tasks.
                "request_ms_mean": round(counts["request_ms_mean"], 1)
                if counts["request_ms_mean"] is not None
                else None,
                "deliver_task_ms_median": round(1000 * statistics.median(deliver_runs), 1) if deliver_runs else None,
                "deliver_task_ms_mean": round(1000 * statistics.mean(deliver_runs), 1) if deliver_runs else None,
                "sweeps_run": len(sweep_runs),
                "sweep_ms_total": round(1000 * sum(sweep_runs)),
                "attempts": counts["attempts"],
                "by_status": counts["by_status"],
                "received": len(received),
                "received_twice": twice,
                "receiver_span_seconds": round(max(arrivals) - min(arrivals), 2) if arrivals else None,
                "load_average_before": load_before,
                "load_average_after": load_after,
            }
            report["rounds"].append(result)
            log(f"{round_name}: {json.dumps(result)}")
            if not finished or twice:
                ok = False
                log(f"{round_name}: did not finish or a delivery arrived twice; the worker's log is in {work}")
        report["load_average_after"] = os.getloadavg()
        report["finished"] = datetime.now(UTC).isoformat()
        (RESULTS / "webhook_drain.json").write_text(json.dumps(report, indent=1) + "\n")
        print()
        print(
            f"{'delay ms':>9} {'deliveries':>11} {'seconds':>9} {'deliveries/s':>13} {'own ms each':>12}"
            f" {'request ms':>11} {'task ms':>8}"
        )
        for row in report["rounds"]:
            print(
                f"{row['delay_ms']:>9} {row['deliveries']:>11} {row['seconds'] or '-':>9} "
                f"{row['deliveries_per_second'] or '-':>13} {row['own_ms_per_delivery'] or '-':>12}"
                f" {row['request_ms_mean'] or '-':>11} {row['deliver_task_ms_median'] or '-':>8}"
            )
        print(f"\nper worker process; load average {report['load_average_before']} -> {report['load_average_after']}")
        return 0 if ok else 1
    finally:
        if worker is not None:
            process_stop(worker)
        process_stop(redis_process)
        receiver.server.shutdown()
        if os.environ.get("DRAIN_KEEP_LOGS") == "true" or not ok:
            log(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
