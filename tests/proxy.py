"""HAProxy from the distribution's package in front of local test servers, running the production config
deploy/haproxy.cfg itself: the test only points its environment variables at a free port and the servers.
Without haproxy the tests skip with a reason, except in CI (CI=true), where they fail; .ci/run installs it."""

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.gunicorn import BASE_DIR, free_port

HAPROXY_CONFIG = BASE_DIR / "deploy" / "haproxy.cfg"
BOOT_SECONDS = 15


def haproxy_binary() -> str:
    """The haproxy executable; skips the test without one, or fails it in CI."""
    found = shutil.which("haproxy") or next(
        (path for path in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(path, os.X_OK)), None
    )
    if found:
        return found
    missing = "needs HAProxy (apt-get install haproxy; .ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {missing}", pytrace=False)
    pytest.skip(missing)


@contextmanager
def haproxy_serving(*, app_urls: tuple[str, str], log: Path) -> Iterator[str]:
    """Yields the proxy's base URL once both app servers answer /healthz through it."""
    binary = haproxy_binary()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PROXY_BIND": f"127.0.0.1:{port}",
        "APP1_ADDR": urlsplit(app_urls[0]).netloc,
        "APP2_ADDR": urlsplit(app_urls[1]).netloc,
        # The app servers run with DEBUG on, whose ALLOWED_HOSTS include 127.0.0.1.
        "HEALTHCHECK_HOST": "127.0.0.1",
    }
    with log.open("w") as output:
        # -db: stay in the foreground, so the process we start is the one we stop.
        proxy = subprocess.Popen(
            [binary, "-db", "-f", str(HAPROXY_CONFIG)], env=env, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_up(proxy, url, log)
        yield url
    finally:
        proxy.send_signal(signal.SIGUSR1)  # soft stop: finish the requests in flight, then exit
        try:
            proxy.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()


def _wait_until_up(proxy: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + BOOT_SECONDS
    while time.monotonic() < deadline:
        if proxy.poll() is not None:
            pytest.fail(f"haproxy exited with {proxy.returncode}:\n{log.read_text()[-3000:]}")
        try:
            # Round robin: two answers in a row come from both servers.
            if all(httpx.get(f"{url}/healthz", timeout=2).status_code == 200 for _ in range(2)):
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"haproxy did not answer within {BOOT_SECONDS} s:\n{log.read_text()[-3000:]}")


@contextmanager
def all_entered(*managers: AbstractContextManager[Any]) -> Iterator[list[Any]]:
    """Enters the context managers at once, each in a thread of its own, and yields their values in order; on
    leaving, exits them at once. Servers that take seconds to start and stop do so side by side."""
    values: list[Any] = [None] * len(managers)
    errors: list[BaseException] = []
    entered = threading.Barrier(len(managers) + 1)
    leave = threading.Event()

    def hold(index: int, manager: AbstractContextManager[Any]) -> None:
        try:
            with manager as value:
                values[index] = value
                entered.wait()
                leave.wait()
        except BaseException as error:  # reported by the caller's thread
            errors.append(error)
            entered.abort()

    threads = [threading.Thread(target=hold, args=item) for item in enumerate(managers)]
    for thread in threads:
        thread.start()
    try:
        try:
            entered.wait()
        except threading.BrokenBarrierError:
            pass
        if errors:
            raise errors[0]
        yield values
    finally:
        leave.set()
        for thread in threads:
            thread.join()
