"""Webhook soak, run by hand (not by the test suite): sales at a steady rate through the real server, every event
delivered to two local endpoints, the broker's webhook queue watched throughout.

    .venv/bin/python bench/webhook_soak.py            # 600 s at 40 sales a second (about 13 minutes in all)

Serves the app as deployed on this machine only (everything on 127.0.0.1): a fresh PostgreSQL database (svc_soak),
a Redis of its own on a free port, gunicorn with 3 workers, a Celery worker consuming `celery,webhooks`, and beat
with the default schedule and settings (WEBHOOK_RETRY_SCHEDULE, WEBHOOK_QUEUE_MAX...). One program (hold 30 days:
each sale announces sale.created and commission.created) has two endpoints for SOAK_EVENT_TYPES, both pointed at a
receiver in this process. Then it posts sales at SOAK_RATE a second for SOAK_SECONDS and waits up to
SOAK_DRAIN_SECONDS for every delivery to succeed.

Reports (stdout and bench/results/webhook_soak.json): sales sent and answered 200, events, deliveries, requests the
receiver got and any twice, how long after the load ended the last one arrived and whether every event was
delivered within a minute of it, the deepest the webhook and default queues got (sampled every 0.2 s), and each run
of the reconciler beat sent: when it was sent, when a worker finished it. Exits 1 if a delivery is missing or
duplicated, or the last came later than a minute after the load.

Environment: SOAK_SECONDS (600), SOAK_RATE (40), SOAK_DRAIN_SECONDS (180), SOAK_WORKER_CONCURRENCY (4),
SOAK_EVENT_TYPES (sale.created: one delivery per sale and endpoint; `*` for every type, so a sale makes sale.created
and commission.created), SOAK_SALES_PER_10 (10: every request a sale; 3 sends 3 sales and 7 clicks of new visitors in
every 10 requests, traffic as an integrator's backend sends it), SOAK_KEEP_LOGS (true keeps the processes'
logs; they are kept anyway when the run got as far as its report)."""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DB_NAME = "svc_soak"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
CUSTOMERS = 400
DELIVERED_WITHIN_SECONDS = 60


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


SOAK_SECONDS = env_int("SOAK_SECONDS", 600)
SOAK_RATE = env_int("SOAK_RATE", 40)
SOAK_DRAIN_SECONDS = env_int("SOAK_DRAIN_SECONDS", 180)
WORKER_CONCURRENCY = env_int("SOAK_WORKER_CONCURRENCY", 4)
SALES_PER_10 = env_int("SOAK_SALES_PER_10", 10)
# What the two endpoints subscribe to (comma-separated; "*" for every type).
EVENT_TYPES = (os.environ.get("SOAK_EVENT_TYPES") or "sale.created").split(",")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def log(message: str) -> None:
    print(f"{datetime.now(UTC):%H:%M:%S} {message}", flush=True)


class Receiver:
    """Answers 200 to every POST and records (path, webhook-id, arrival time)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str, float]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._lock:
                    receiver.received.append((self.path, self.headers.get("webhook-id", ""), time.time()))
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


class DepthSampler:
    """LLEN of the webhook and default queues every 0.2 s: the deepest each got, and the series."""

    def __init__(self, redis_url: str) -> None:
        self.client = redis.Redis.from_url(redis_url)
        self.max = {"webhooks": 0, "celery": 0}
        self.series: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            webhooks, default = self.client.llen("webhooks"), self.client.llen("celery")
            self.max["webhooks"] = max(self.max["webhooks"], webhooks)
            self.max["celery"] = max(self.max["celery"], default)
            self.series.append((time.time(), webhooks, default))
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)


def recreate_database() -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB_NAME)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))


SEED = """
import json
import django
django.setup()
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, WebhookEndpointFactory
program = ProgramFactory(hold_days=30)
link = ReferralLinkFactory(program=program)
for n in range({customers}):
    CustomerFactory(link=link, customer_key=f"user-{{n}}", customer_status="lead")
for name in ("a", "b"):
    WebhookEndpointFactory(
        program=program, url=f"http://127.0.0.1:{port}/endpoint-{{name}}", event_types={event_types!r}
    )
print(json.dumps({{"key": program.raw_api_key, "program": program.pk, "code": link.short_link}}))
"""


def run_checked(command: list[str], env: dict[str, str], **kwargs: Any) -> str:
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"{command[:3]} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def load(url: str, key: str, code: str, seconds: int, rate: int) -> Counter[int | str]:
    """Posts `rate` requests a second for `seconds`: of every 10, SALES_PER_10 sales, each to a customer of the
    program, and clicks on its link by new visitors (an address and browser build each); counts the statuses."""
    statuses: Counter[int | str] = Counter()
    lock = threading.Lock()
    local = threading.local()
    run = secrets.token_hex(3)

    def post(n: int) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        if n % 10 < SALES_PER_10:
            path = "/api/v1/track/sale"
            body = {"transaction_id": f"soak-{run}-{n}", "amount_cents": 4900, "customer_key": f"user-{n % CUSTOMERS}"}
        else:
            path = "/api/v1/track/click"
            body = {
                "affiliate_url": f"https://shop.example.com/pricing?aff={code}",
                "visitor_ip": f"198.51.{n // 250 % 250}.{n % 250 + 1}",
                "user_agent": f"Mozilla/5.0 (X11; Linux x86_64) Chrome/{100 + n % 40}.0.{n} Safari/537.36",
            }
        try:
            status = client.post(path, json=body).status_code
        except httpx.HTTPError as error:
            status = type(error).__name__
        with lock:
            statuses[status] += 1

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=64) as pool:
        for n in range(seconds * rate):
            due = start + n / rate
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            pool.submit(post, n)
            if n and n % (rate * 60) == 0:
                log(f"  {n} requests sent, {dict(statuses)}")
    return statuses


def count(conn: psycopg.Connection, query: str, params: list[object] | None = None) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def delivery_counts() -> dict[str, int]:
    """Events, the events the endpoints want, deliveries by status, attempts."""
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://")) as conn:
        events = count(conn, "SELECT count(*) FROM webhooks_webhookevent")
        wanted = count(
            conn,
            "SELECT count(*) FROM webhooks_webhookevent WHERE %s OR type = ANY(%s)",
            ["*" in EVENT_TYPES, EVENT_TYPES],
        )
        rows = conn.execute("SELECT status, count(*) FROM webhooks_webhookdelivery GROUP BY status").fetchall()
        attempts = count(conn, "SELECT count(*) FROM webhooks_webhookattempt")
    return {"events": events, "wanted_events": wanted, "attempts": attempts, **dict(rows)}


def reconciler_runs(beat_log: Path, worker_log: Path) -> list[dict[str, Any]]:
    """Each commissions.reconcile beat sent, and when a worker finished one (times from the logs, UTC)."""
    stamp = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})"

    def when(text: str) -> float:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp()

    sent = [when(m) for m in re.findall(stamp + r".*Sending due task reconcile-commissions", beat_log.read_text())]
    done = [
        when(m)
        for m in re.findall(stamp + r".*Task commissions\.reconcile\[[^\]]+\] succeeded", worker_log.read_text())
    ]
    runs = []
    for at in sent:
        finished = next((t for t in done if t >= at), None)
        runs.append({"sent": at, "finished": finished, "lag_seconds": None if finished is None else finished - at})
    return runs


def main() -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="webhook-soak-"))
    processes: list[subprocess.Popen[bytes]] = []
    redis_port = free_port()
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    processes.append(
        subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=(work / "redis.log").open("w"),
            stderr=subprocess.STDOUT,
        )
    )
    receiver = Receiver()
    http_port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": DATABASE_URL,
        "REDIS_URL": redis_url,
        "DEBUG": "false",
        "SECRET_KEY": "soak-" + secrets.token_hex(16),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "RATELIMIT_SCALE": "100000",
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "PORT": str(http_port),
        "WEB_CONCURRENCY": "3",
        "ACCESS_LOG": "",
        "LOG_LEVEL": "WARNING",
    }
    for name in ("CELERY_QUEUE", "CELERY_WEBHOOK_QUEUE"):
        env.pop(name, None)
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(),
        "rate": SOAK_RATE,
        "seconds": SOAK_SECONDS,
        "event_types": EVENT_TYPES,
        "worker_concurrency": WORKER_CONCURRENCY,
        "sales_per_10_requests": SALES_PER_10,
    }
    try:
        log(f"database {DB_NAME}, redis :{redis_port}, receiver :{receiver.port}")
        recreate_database()
        run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env)
        seeded = json.loads(
            run_checked(
                [sys.executable, "-c", SEED.format(customers=CUSTOMERS, port=receiver.port, event_types=EVENT_TYPES)],
                {**env, "FAST_PASSWORD_HASHER": "true"},
            )
            .strip()
            .splitlines()[-1]
        )
        worker_log, beat_log = work / "worker.log", work / "beat.log"
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py"],
                cwd=ROOT,
                env=env,
                stdout=(work / "gunicorn.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        processes.append(
            subprocess.Popen(
                [*celery, "worker", "-Q", "celery,webhooks", "-c", str(WORKER_CONCURRENCY), "-l", "INFO"],
                cwd=ROOT,
                env={**env, "LOG_LEVEL": "INFO"},
                stdout=worker_log.open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        processes.append(
            subprocess.Popen(
                [*celery, "beat", "-l", "INFO", "-s", str(work / "beat-schedule")],
                cwd=ROOT,
                env={**env, "LOG_LEVEL": "INFO"},
                stdout=beat_log.open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        url = f"http://127.0.0.1:{http_port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                sys.exit(f"the server did not come up:\n{(work / 'gunicorn.log').read_text()[-3000:]}")
            time.sleep(0.5)
        time.sleep(5)  # the worker and beat boot
        sampler = DepthSampler(redis_url)
        log(f"load: {SOAK_RATE} requests/s ({SALES_PER_10} in 10 sales) for {SOAK_SECONDS} s")
        load_started = time.time()
        statuses = load(url, seeded["key"], seeded["code"], SOAK_SECONDS, SOAK_RATE)
        load_ended = time.time()
        log(f"load ended: {dict(statuses)}; draining")
        drain_deadline = time.monotonic() + SOAK_DRAIN_SECONDS
        while time.monotonic() < drain_deadline:
            counts = delivery_counts()
            if counts.get("pending", 0) == 0 and counts.get("succeeded", 0) == 2 * counts["wanted_events"]:
                break
            time.sleep(1)
        time.sleep(3)
        sampler.stop()
        counts = delivery_counts()
        per_delivery = Counter((path, webhook_id) for path, webhook_id, _ in receiver.received)
        last_arrival = max((at for _, _, at in receiver.received), default=load_ended)
        twice = sum(1 for n in per_delivery.values() if n > 1)
        expected = 2 * counts["wanted_events"]
        late = sum(1 for _, _, at in receiver.received if at > load_ended + DELIVERED_WITHIN_SECONDS)
        runs = reconciler_runs(beat_log, worker_log)
        during = [run for run in runs if load_started <= run["sent"] <= load_ended + DELIVERED_WITHIN_SECONDS]
        lags = [run["lag_seconds"] for run in during if run["lag_seconds"] is not None]
        report.update(
            {
                "requests": dict(Counter({str(k): v for k, v in statuses.items()})),
                "load_seconds": round(load_ended - load_started, 1),
                "deliveries": counts,
                "expected_deliveries": expected,
                "received_distinct": len(per_delivery),
                "received_twice": twice,
                "last_arrival_after_load_seconds": round(last_arrival - load_ended, 1),
                "arrivals_later_than_a_minute": late,
                "all_delivered_within_a_minute": len(per_delivery) == expected
                and last_arrival <= load_ended + DELIVERED_WITHIN_SECONDS,
                "max_depth": sampler.max,
                "reconciler_runs_during_load": len(during),
                "reconciler_runs_unfinished": sum(1 for run in during if run["finished"] is None),
                "reconciler_max_lag_seconds": round(max(lags), 2) if lags else None,
                "logs": str(work),
            }
        )
        (RESULTS / "webhook_soak.json").write_text(
            json.dumps({**report, "depth_series": sampler.series[:: max(1, len(sampler.series) // 2000)]}, indent=1)
        )
        print(json.dumps(report, indent=1))
        ok = report["all_delivered_within_a_minute"] and not twice and counts.get("succeeded", 0) == expected
        return 0 if ok else 1
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        receiver.server.shutdown()
        if os.environ.get("SOAK_KEEP_LOGS") != "true" and "logs" not in report:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
