"""A real Celery worker process on Redis against the test database, for behaviour that crosses
processes. Tests using it are marked `worker` (and `postgres`: SQLite's test database is in memory)."""

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from config import celery_app

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def celery_worker_process(transactional_db):
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        pytest.skip("needs REDIS_URL")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    database = connection.settings_dict
    database_url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_default_queue)
    with (
        celery_worker_running(queue=queue, database_url=database_url, redis_url=redis_url) as worker,
        # webhooks.queue.task_route reads it as each task is sent.
        override_settings(WEBHOOK_QUEUE=webhook_queue_of(queue)),
    ):
        celery_app.conf.task_always_eager = False
        celery_app.conf.task_default_queue = queue
        try:
            yield worker
        finally:
            celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = previous


def webhook_queue_of(queue: str) -> str:
    """The webhook queue that goes with a default queue other than "celery" (config/settings.py WEBHOOK_QUEUE)."""
    return f"{queue}-webhooks"


@contextmanager
def celery_worker_running(
    *, queue: str, database_url: str, redis_url: str, concurrency: int = 1
) -> Iterator[subprocess.Popen[str]]:
    """A worker consuming only `queue` and its webhook queue, yielded once it answers a ping; stopped when the
    block ends. One process (the solo pool) unless `concurrency` asks for more."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CELERY_QUEUE": queue,
        "CELERY_WEBHOOK_QUEUE": webhook_queue_of(queue),
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "LOG_LEVEL": "INFO",
    }
    log = tempfile.NamedTemporaryFile("w+", prefix="celery-worker-", suffix=".log", delete=False)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            *(["--pool", "solo"] if concurrency == 1 else ["--concurrency", str(concurrency)]),  # CELERY_WORKER_POOL
            "-Q",
            f"{queue},{webhook_queue_of(queue)}",
            "-n",
            f"{queue}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        node = f"{queue}@{socket.gethostname()}"
        if not wait_for(
            lambda: worker.poll() is None and celery_app.control.ping(destination=[node], timeout=0.5),
            timeout=60,
        ):
            log.seek(0)
            raise RuntimeError(f"Celery worker did not start:\n{log.read()[-4000:]}")
        yield worker
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()
        os.unlink(log.name)


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    return predicate()


# Nothing listens here: every publish fails at once, as with Redis down.
CLOSED_BROKER = "redis://127.0.0.1:6390/0"


@pytest.fixture
def broker_down():
    """Celery publishes to a closed port with eager mode off, as a server does when Redis is down.
    Yields a function that brings the configured broker back."""
    previous = (celery_app.conf.broker_url, celery_app.conf.task_always_eager)

    def use_broker(url: str) -> None:
        # Celery keeps its connection and producer pools for the life of the app; dropping them (as it does
        # itself after a fork) makes the next publish connect to the new address. The stubs leave both out.
        app: Any = celery_app
        app._pool = None
        app.amqp._producer_pool = None
        celery_app.conf.update(broker_url=url)

    def broker_back() -> None:
        use_broker(previous[0])

    use_broker(CLOSED_BROKER)
    celery_app.conf.task_always_eager = False
    yield broker_back
    broker_back()
    celery_app.conf.task_always_eager = previous[1]
