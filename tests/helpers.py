"""Small builders shared by the API tests."""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from celery.signals import task_prerun
from django.db import connection

T = TypeVar("T")


def bearer(key: str) -> dict[str, str]:
    """Test-client keyword arguments for `Authorization: Bearer <key>`."""
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def platform_error(
    status: int, name: str, message: str, code: str | None = None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The spec's platform envelope. `code` only where the route adds one (sale and refund always do)."""
    error: dict[str, Any] = {"status": status, "name": name, "message": message, "details": details or {}}
    if code is not None:
        error["code"] = code
    return {"data": None, "error": error}


def bad_request(message: str, code: str | None = None) -> dict[str, Any]:
    """The platform envelope of a 400."""
    return platform_error(400, "BadRequestError", message, code)


def assert_rate_limited(response) -> int:
    """The spec's typed 429: body, Retry-After and an empty bucket. Returns retry_after_seconds."""
    from core import messages

    assert response.status_code == 429
    body = response.json()
    retry = body["error"]["retry_after_seconds"]
    assert body == {
        "error": {
            "code": "rate_limited",
            "message": messages.RATE_LIMITED.format(seconds=retry),
            "status": 429,
            "retry_after_seconds": retry,
        }
    }
    assert 1 <= retry <= 60
    assert response.headers["Retry-After"] == str(retry)
    assert response.headers["X-RateLimit-Remaining"] == "0"
    return retry


def run_together(count: int, task: Callable[[int], T]) -> list[T]:
    """Runs task(0) … task(count - 1) in `count` threads released together by a barrier and returns their
    results in that order. Each thread closes its own database connection when done; an exception in a
    thread, or a thread still running after two minutes, fails the test."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[n] = task(n)
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert errors == []
    return results


def wait_for_lock_waiters(count: int, *, or_until: Callable[[], bool], timeout: float = 30) -> None:
    """Called by the thread holding a lock (PostgreSQL): returns once `count` other sessions on this database
    are waiting for a lock (queued behind the holder, directly or behind another waiter), or once
    `or_until()` is true (the rivals finished without queueing, as they would were the lock missing). The
    rivals wait on a threading.Event the holder sets once it holds the lock, so it is held exactly until
    they queue instead of for a guessed sleep. A blocked rival cannot signal anything itself, so the holder
    asks PostgreSQL."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # pg_stat_activity is otherwise read once per transaction
            cursor.execute(
                "SELECT count(DISTINCT locks.pid) FROM pg_locks locks"
                " JOIN pg_stat_activity activity ON activity.pid = locks.pid"
                " WHERE NOT locks.granted AND activity.datname = current_database()"
            )
            if cursor.fetchone()[0] >= count or or_until():
                return
            assert time.monotonic() < deadline, f"{count} session(s) never queued behind the lock"
            time.sleep(0.005)


# The request log's row of a program API call: tests write it at once (REQUEST_LOG_BATCH = 1), so a pinned query
# count includes it; production queues rows and writes them in batches (programs.calllog).
REQUEST_LOG_ROW = 1


@contextmanager
def tasks_run() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """Yields a list that gets (task name, arguments) of every task that starts while the block runs (in-process
    tasks run as they are queued)."""
    started: list[tuple[str, tuple[Any, ...]]] = []

    def note(sender: Any = None, task: Any = None, args: Any = (), **_: Any) -> None:
        started.append((task.name, tuple(args)))

    task_prerun.connect(note)
    try:
        yield started
    finally:
        task_prerun.disconnect(note)
