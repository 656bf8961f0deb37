"""Not waiting on a Redis that just failed.

Every Redis client of the service has socket timeouts (config/settings.py), so a Redis that refuses connections
costs a call milliseconds and one that accepts and never answers costs it the timeout. A request path that met
either does not meet it again at once: the guard of that client skips Redis for REDIS_FAILURE_SKIP_SECONDS in this
process (the caches fall back to the process's memory, a task is left to the sweeps that send from the database),
then lets the next call try again. Per process, so one outage costs each process one timeout per interval."""

import threading
import time
from typing import Any
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings


class BrokerSkipped(ConnectionError):
    """A send not tried: the broker failed a moment ago in this process."""


class RedisGuard:
    def __init__(self, name: str) -> None:
        self.name = name
        self._skip_until = 0.0
        self._lock = threading.Lock()

    def available(self) -> bool:
        return time.monotonic() >= self._skip_until

    def failed(self) -> None:
        with self._lock:
            self._skip_until = time.monotonic() + settings.REDIS_FAILURE_SKIP_SECONDS

    def succeeded(self) -> None:
        if self._skip_until:
            with self._lock:
                self._skip_until = 0.0

    def reset(self) -> None:
        self.succeeded()


_guards: dict[str, RedisGuard] = {}
_guards_lock = threading.Lock()


def redis_guard_for(url: str) -> RedisGuard:
    """The guard of the Redis at `url`'s address: the caches and the broker on one Redis share it, so the first of
    them to meet an outage spares the others their timeouts."""
    address = urlsplit(url).netloc.rpartition("@")[2] or url
    guard = _guards.get(address)
    if guard is None:
        with _guards_lock:
            guard = _guards.setdefault(address, RedisGuard(address))
    return guard


def broker_guard(app: Any = None) -> RedisGuard:
    """The guard of the Celery broker (the app's broker URL, read at each call: tests move it)."""
    return redis_guard_for(str((app or current_app).conf.broker_url))


def redis_guards_reset() -> None:
    """Every guard lets its next call try (tests)."""
    for guard in list(_guards.values()):
        guard.reset()
