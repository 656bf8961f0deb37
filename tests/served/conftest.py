"""The served layer: the real server (gunicorn with config/gunicorn.conf.py, 3 workers) on the pytest test
database, driven over HTTP. Everything that only breaks when a server has several processes (the signing key,
the rate-limit counts) is checked here; the in-process test client cannot see it.

The server reads the test database, so the tests commit their data (transactional_db) and the layer needs
PostgreSQL: an SQLite test database lives in the test process's memory."""

import hashlib
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django_ratelimit.core import _get_window as django_window_end

from tests.gunicorn import free_port, gunicorn_serving

WORKERS = 3
PASSWORD = "pass-word-123"  # tests.factories.UserFactory's
# A test that sends N+1 calls needs its whole run inside one rate-limit window.
WINDOW_MARGIN_SECONDS = 20


@dataclass
class Served:
    url: str
    log: Path
    redis_url: str

    def pids_that_answered(self, path: str) -> set[str]:
        """Worker pids that logged a response to `path` (the access log here starts with the worker's pid)."""
        pattern = re.compile(rf'^<(\d+)> \d+ "[A-Z]+ {re.escape(path)}')
        return {match.group(1) for line in self.log.read_text().splitlines() if (match := pattern.match(line))}


def _test_database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def webhooks_env(*, redis_url: str, queue: str) -> dict[str, str]:
    """The environment of a server, worker and beat that deliver webhooks to a receiver on loopback (which the service
    refuses unless allowed, docs/webhooks.md), on the test database and `queue`."""
    from django.conf import settings

    return {
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": redis_url,
        "DEBUG": "true",
        # One SECRET_KEY for every process, as docs/deploy.md requires: the endpoints this process makes keep their
        # secrets encrypted under it, and the worker must decrypt them to sign.
        "SECRET_KEY": settings.SECRET_KEY,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CELERY_QUEUE": queue,
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "RATELIMIT_SCALE": "100",
        "FAST_PASSWORD_HASHER": "true",
    }


def _start(tmp_path: Path, *, redis_url: str) -> Iterator[Served]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "gunicorn.log"
    env = {
        "DATABASE_URL": _test_database_url(),
        "DEBUG": "true",
        # No SECRET_KEY (each worker reads or creates the checkout's key file; here a fresh one, which all three
        # race to create), no INSTANCE_ID (the gunicorn master makes one), Redis only in the Redis variant.
        "SECRET_KEY": "",
        "SECRET_KEY_FILE": str(tmp_path / "secret_key"),
        "INSTANCE_ID": "",
        "REDIS_URL": redis_url,
        "RATELIMIT_SHARED": "false",
        "RATELIMIT_ENABLE": "true",
        "RATELIMIT_SCALE": "1",
        "PUBLIC_BASE_URL": url,
        # The test process stores users with the fast test hasher.
        "FAST_PASSWORD_HASHER": "true",
    }
    access_log_format = ("--access-logformat", '%(p)s %(s)s "%(r)s"')
    with gunicorn_serving(env=env, log=log, workers=WORKERS, port=port, extra_args=access_log_format):
        yield Served(url=url, log=log, redis_url=redis_url)


@pytest.fixture(scope="session")
def served(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Served]:
    """The server on the embedded default: no Redis, rate limits counted in the instance's SQLite file."""
    with django_db_blocker.unblock():
        yield from _start(tmp_path_factory.mktemp("served"), redis_url="")


@pytest.fixture(scope="session")
def served_redis(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Served]:
    """The server with REDIS_URL: rate limits counted in Redis under the instance's id."""
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true needs REDIS_URL", pytrace=False)
        pytest.skip("needs REDIS_URL")
    with django_db_blocker.unblock():
        yield from _start(tmp_path_factory.mktemp("served-redis"), redis_url=redis_url)


@pytest.fixture(params=["embedded", "redis"])
def any_served(request) -> Served:
    return request.getfixturevalue("served" if request.param == "embedded" else "served_redis")


# --- rate-limit windows --------------------------------------------------------------------------------------------
# django-ratelimit counts in fixed windows whose end depends on the counted value (a CRC jitter) and the clock.
# The conftest's window patch does not reach the server, so the tests choose values whose window has time left.
# django_window_end is the library's own function, taken before that patch replaces it in this process.


def seconds_left_in_window(value: str, period: int = 60) -> int:
    return django_window_end(value, period) - int(time.time())


_used_addresses: set[str] = set()


def loopback_with_a_full_window() -> str:
    """A 127.0.0.0/8 source address, unused by earlier tests, whose per-IP window has time left for a whole test."""
    for last in range(2, 255):
        address = f"127.0.0.{last}"
        if address not in _used_addresses and seconds_left_in_window(f"ip:{address}") >= WINDOW_MARGIN_SECONDS:
            _used_addresses.add(address)
            return address
    raise AssertionError("no loopback address has a rate-limit window with time left")


def key_has_a_full_window(raw_key: str) -> bool:
    return seconds_left_in_window("key:" + hashlib.sha256(raw_key.encode()).hexdigest()) >= WINDOW_MARGIN_SECONDS


# --- HTTP helpers --------------------------------------------------------------------------------------------------


def send_concurrently(send, count: int, threads: int = 12) -> list[httpx.Response]:
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(send, range(count)))


def sign_in(browser: httpx.Client, username: str, next_path: str = "/") -> httpx.Response:
    """Signs in through the dashboard's sign-in form, as a person would. Answers the page it lands on."""
    form = browser.get("/accounts/login/", params={"next": next_path})
    assert form.status_code == 200, form.text
    landed = browser.post(
        "/accounts/login/",
        params={"next": next_path},
        data={
            "username": username,
            "password": PASSWORD,
            "next": next_path,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        headers={"Referer": str(form.url)},
        follow_redirects=True,
    )
    assert landed.status_code == 200, landed.text
    return landed
