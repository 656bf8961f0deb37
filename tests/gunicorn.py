"""The real server for tests that cross processes: gunicorn with config/gunicorn.conf.py (what `make run` serves
with) on a free loopback port, its output in a log file, stopped when the block ends."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

BASE_DIR = Path(__file__).resolve().parents[1]
BOOT_SECONDS = 30


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def gunicorn_serving(
    *, env: dict[str, str], log: Path, workers: int, port: int | None = None, extra_args: tuple[str, ...] = ()
) -> Iterator[str]:
    """Yields the server's base URL once /healthz answers 200 and every worker has booted. `env` is laid over
    this process's environment; empty values there win over a developer's .env."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    server_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PORT": str(port),
        "WEB_CONCURRENCY": str(workers),
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "LOG_LEVEL": "WARNING",
        # Each request-log row written within its request: no flusher thread writes one after the test has ended,
        # while the test database is emptied (its TRUNCATE and the row's foreign-key check deadlock).
        "REQUEST_LOG_BATCH": "1",
        **env,
    }
    command = [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", *extra_args]
    with log.open("w") as output:
        server = subprocess.Popen(command, cwd=BASE_DIR, env=server_env, stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(server, url, log, workers)
        yield url
    finally:
        # Quick shutdown: nothing waits on a test server's requests once its tests are done.
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_until_up(server: subprocess.Popen[bytes], url: str, log: Path, workers: int) -> None:
    deadline = time.monotonic() + BOOT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"gunicorn exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            booted = log.read_text().count("Booting worker") >= workers
            if booted and httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"gunicorn did not answer within {BOOT_SECONDS} s:\n{log.read_text()[-3000:]}")
