"""Cache backends for the rate-limit counts.

SQLiteCounterCache: one SQLite file, shared by every process of one server instance.

The rate limits count per API server instance, and an instance is usually several gunicorn workers. Local memory
would give each worker its own count; this file gives them one, with the two operations django-ratelimit needs
(`add` and `incr`) each a single SQL statement (core.statements.CounterFile), so they are atomic across
processes. Nothing here needs to be durable: the counters live a minute, so the file skips fsync.

Integers are stored as SQLite integers (so `incr` is arithmetic in SQL); anything else is pickled.

RedisCounterCache: Django's Redis cache that keeps counting in the process while Redis is unreachable
(FallbackRedisCache, the default cache's backend, does the same for every cache call)."""

import logging
import os
import pickle
import re
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

from .logging import outage_log
from .redis_guard import redis_guard_for
from .statements import CounterFile

logger = logging.getLogger(__name__)

# Rows past their expiry are deleted at most this often per process; reads ignore them meanwhile.
CULL_INTERVAL_SECONDS = 60.0
# A write waits for another process's write this long at most. SQLite's own busy handler sleeps 1 ms, then
# longer; a count holds the lock for microseconds, so waiting here starts much shorter.
BUSY_TIMEOUT_SECONDS = 5.0
_FIRST_WAIT_SECONDS = 0.00005
_LONGEST_WAIT_SECONDS = 0.002

# SQLite has no infinity literal in older versions; a year 5000 timestamp stands for "never".
_NEVER = 95617584000.0


def instance_counter_file(instance_id: str) -> Path:
    """Where one server instance keeps its counters: a temporary file named after the instance."""
    safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", instance_id)
    return Path(tempfile.gettempdir()) / f"svc-ratelimit-{safe_id}.sqlite3"


def remove_counter_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _encode(value: Any) -> Any:
    if type(value) is int:
        return value
    return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def _decode(stored: Any) -> Any:
    if isinstance(stored, int):
        return stored
    return pickle.loads(stored)


class SQLiteCounterCache(BaseCache):
    """LOCATION is the SQLite file's path."""

    def __init__(self, location: str, params: dict[str, Any]) -> None:
        super().__init__(params)
        self._path = location
        self._local = threading.local()
        self._last_cull = 0.0

    def _connection(self) -> sqlite3.Connection:
        # One connection per thread, and never one inherited across a fork.
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is not None and self._local.pid == os.getpid():
            return connection
        connection = sqlite3.connect(self._path, timeout=0, isolation_level=None)
        for statement in CounterFile.SETUP:
            self._retry_busy(connection, statement, ())
        self._local.connection = connection
        self._local.pid = os.getpid()
        return connection

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> sqlite3.Cursor:
        return self._retry_busy(self._connection(), sql, parameters)

    @staticmethod
    def _retry_busy(connection: sqlite3.Connection, sql: str, parameters: tuple[object, ...]) -> sqlite3.Cursor:
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        wait = _FIRST_WAIT_SECONDS
        while True:
            try:
                return connection.execute(sql, parameters)
            except sqlite3.OperationalError as error:
                # The low byte is the primary code: SQLITE_BUSY_RECOVERY (261) while another process sets up the
                # WAL is as retryable as a plain SQLITE_BUSY.
                busy = (error.sqlite_errorcode or 0) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() > deadline:
                    raise
            time.sleep(wait)
            wait = min(wait * 2, _LONGEST_WAIT_SECONDS)

    def _expiry(self, timeout: float | None) -> float:
        seconds = self.get_backend_timeout(timeout)
        return _NEVER if seconds is None else seconds

    def _maybe_cull(self, now: float) -> None:
        if now - self._last_cull < CULL_INTERVAL_SECONDS:
            return
        self._last_cull = now
        self._execute(CounterFile.CULL, (now,))

    def add(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        now = time.time()
        self._maybe_cull(now)
        # Most calls find the window's count already there: a read settles them without taking the write lock.
        if self._execute(CounterFile.LIVE, (key, now)).fetchone():
            return False
        # One statement: inserts, or replaces a row that has expired, or leaves a live row alone.
        cursor = self._execute(CounterFile.ADD, (key, _encode(value), self._expiry(timeout), now))
        return cursor.rowcount == 1

    def get(self, key: str, default: Any = None, version: int | None = None) -> Any:
        key = self.make_and_validate_key(key, version=version)
        row = self._execute(CounterFile.GET, (key, time.time())).fetchone()
        return default if row is None else _decode(row[0])

    def set(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        key = self.make_and_validate_key(key, version=version)
        self._execute(CounterFile.SET, (key, _encode(value), self._expiry(timeout)))

    def touch(self, key: str, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        cursor = self._execute(CounterFile.TOUCH, (self._expiry(timeout), key, time.time()))
        return cursor.rowcount == 1

    def incr(self, key: str, delta: int = 1, version: int | None = None) -> int:
        key = self.make_and_validate_key(key, version=version)
        # One statement, so two processes incrementing at once both count.
        row = self._execute(CounterFile.INCR, (delta, key, time.time())).fetchone()
        if row is None:
            raise ValueError(f"Key '{key}' not found")
        value: int = row[0]
        return value

    def count_one(self, key: str, timeout: float) -> int:
        """One more in the counter under `key`, which starts at 1 (living `timeout` seconds) when it is missing or
        has expired: django-ratelimit's add-then-incr in one statement. Returns the new count."""
        key = self.make_and_validate_key(key)
        now = time.time()
        self._maybe_cull(now)
        row = self._execute(CounterFile.COUNT_ONE, (key, now + timeout, now, now)).fetchone()
        assert row is not None  # an upsert with RETURNING answers its row
        count: int = row[0]
        return count

    def delete(self, key: str, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        return self._execute(CounterFile.DELETE, (key,)).rowcount == 1

    def has_key(self, key: str, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        row = self._execute(CounterFile.LIVE, (key, time.time())).fetchone()
        return row is not None

    def clear(self) -> None:
        self._execute(CounterFile.CLEAR)

    def close(self, **kwargs: Any) -> None:
        # Django closes caches after every request; the connection is kept (opening one costs more than a count).
        pass


class FallbackRedisCache(RedisCache):
    """Django's Redis cache that keeps answering from the process's memory while Redis is unreachable or hanging
    (every client has socket timeouts, config/settings.py): a failed call, and every call for
    REDIS_FAILURE_SKIP_SECONDS after it (core.redis_guard), reads and writes a local cache instead. What the
    service keeps in it is worth a round trip, never worth a request's time: a fan-out request already made, a
    first-party visit already written down, a count."""

    # A count made locally after Redis failed between add and incr; django-ratelimit's windows last 60 s + 5.
    LOCAL_COUNT_SECONDS = 65
    OUTAGE_KIND = "cache.redis_unavailable"

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._local = LocMemCache(f"redis-fallback-{id(self)}", params)
        self._guard = redis_guard_for(server)

    def _unavailable(self, error: RedisError) -> None:
        self._guard.failed()
        outage_log(logger, self.OUTAGE_KIND, error)

    def _redis(self) -> bool:
        return self._guard.available()

    def add(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        if self._redis():
            try:
                return super().add(key, value, timeout, version)
            except RedisError as error:
                self._unavailable(error)
        return self._local.add(key, value, timeout, version)

    def get(self, key: str, default: Any = None, version: int | None = None) -> Any:
        if self._redis():
            try:
                return super().get(key, default, version)
            except RedisError as error:
                self._unavailable(error)
        return self._local.get(key, default, version)

    def set(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        if self._redis():
            try:
                super().set(key, value, timeout, version)
                return
            except RedisError as error:
                self._unavailable(error)
        self._local.set(key, value, timeout, version)

    def delete(self, key: str, version: int | None = None) -> bool:
        deleted = self._local.delete(key, version)
        if self._redis():
            try:
                return super().delete(key, version) or deleted
            except RedisError as error:
                self._unavailable(error)
        return deleted

    def incr(self, key: str, delta: int = 1, version: int | None = None) -> int:
        if self._redis():
            try:
                return super().incr(key, delta, version)
            except RedisError as error:
                self._unavailable(error)
        # Redis may have taken the add, then failed: then this process starts the count again rather than refusing.
        return self._count_locally(key, delta, self.LOCAL_COUNT_SECONDS, version)

    def clear(self) -> None:
        self._local.clear()
        super().clear()

    def _count_locally(self, key: str, delta: int, timeout: float, version: int | None = None) -> int:
        """`delta` more in this process's own counter under `key`, which starts at `delta` when missing or expired."""
        try:
            return self._local.incr(key, delta, version)
        except ValueError:
            self._local.add(key, delta, timeout, version)
            return delta


class RedisCounterCache(FallbackRedisCache):
    """Counts in Redis. While Redis is unreachable each process counts on its own, so the limits still hold per
    process and the tracking routes keep answering instead of failing on their rate-limit check."""

    OUTAGE_KIND = "ratelimit.redis_unavailable"

    # INCR, and the expiry set by the INCR that created the key: one round trip, atomic in Redis.
    _COUNT_ONE = (
        "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return n"
    )

    def count_one(self, key: str, timeout: float) -> int:
        """One more in the counter under `key`, which starts at 1 (living `timeout` seconds) when missing: one round
        trip where django-ratelimit's add-then-incr takes two. Counts in the process while Redis is unreachable."""
        full_key = self.make_and_validate_key(key)
        if self._redis():
            try:
                client = self._cache.get_client(full_key, write=True)
                return int(client.eval(self._COUNT_ONE, 1, full_key, max(1, int(timeout))))
            except RedisError as error:
                self._unavailable(error)
        return self._count_locally(key, 1, timeout)

    def clear(self) -> None:
        """Only this cache's keys: Django's RedisCache.clear() empties the whole Redis database, Celery's queue
        included."""
        self._local.clear()
        try:
            client = self._cache.get_client(None, write=True)
            keys = list(client.scan_iter(match=f"{self.key_prefix}:*", count=1000))
            for start in range(0, len(keys), 1000):
                client.delete(*keys[start : start + 1000])
        except RedisError as error:
            self._unavailable(error)
