import contextvars
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass

from django.db import DatabaseError
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import RedisError

from .redaction import redact_line

current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


class RedactingFormatter(logging.Formatter):
    """The application's log lines with secrets and emails masked (core.redaction.redact_line), traceback
    included: Django names a refused request by its path, and an error's text may quote what a client sent."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_line(super().format(record))


class RedactedFormatter(logging.Formatter):
    """Another formatter's lines, redacted: for handlers this project does not configure (the Celery worker's)."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact_line(self.inner.format(record))


def handlers_redact(logger: logging.Logger, **_: object) -> None:
    """Celery's after_setup_logger and after_setup_task_logger receiver (config/celery.py): a worker replaces the
    root logger's handlers with its own, which would write past RedactingFormatter."""
    for handler in logger.handlers:
        if not isinstance(handler.formatter, RedactingFormatter | RedactedFormatter):
            handler.setFormatter(RedactedFormatter(handler.formatter))


# A failing outside service (Redis, the broker) is logged at most this often per kind and process.
OUTAGE_LOG_INTERVAL_SECONDS = 60.0


# What an outage raises: its lines need no traceback. Anything else (a bug met while a service is down) keeps one.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (OSError, RedisError, KombuOperationalError, DatabaseError)


@dataclass
class _Outage:
    logged_at: float
    unlogged: int = 0


_outages: dict[str, _Outage] = {}
_outage_totals: Counter[str] = Counter()
_outages_lock = threading.Lock()


def outage_log(logger: logging.Logger, kind: str, error: BaseException, **extra: object) -> None:
    """Logs a failure that repeats for as long as an outage lasts (every event, every request) once a minute per
    kind and process: the first as one line with the error (no traceback: the outage, not the code, is the news),
    then, while it goes on, one line a minute saying how many more there were. Every failure counts in
    outage_totals(), this process's metric."""
    now = time.monotonic()
    with _outages_lock:
        _outage_totals[kind] += 1
        outage = _outages.get(kind)
        if outage is not None and now - outage.logged_at < OUTAGE_LOG_INTERVAL_SECONDS:
            outage.unlogged += 1
            return
        more = outage.unlogged if outage is not None else 0
        _outages[kind] = _Outage(logged_at=now)
    since = f" ({more} more in the last {int(OUTAGE_LOG_INTERVAL_SECONDS)} s)" if more else ""
    logger.error(
        "%s: %s: %s%s",
        kind,
        type(error).__name__,
        str(error)[:300],
        since,
        extra={**extra, "outage": kind, "count": more + 1},
        exc_info=None if isinstance(error, OUTAGE_ERRORS) else error,
    )


def outage_totals() -> dict[str, int]:
    """How many failures of each kind this process has met since it started."""
    with _outages_lock:
        return dict(_outage_totals)


def outages_forget() -> None:
    """Starts the outage log afresh (tests)."""
    with _outages_lock:
        _outages.clear()
        _outage_totals.clear()
