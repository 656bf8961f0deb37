"""The request log of program API calls (ApiCall): what a call sent (a safe excerpt), how it was answered and with
which key. Bounded by api_calls_purge (beat): rows older than REQUEST_LOG_RETENTION_DAYS, and beyond the newest
REQUEST_LOG_MAX_ROWS per program.

Cheap on the hot path: a call's row is queued in the process as a plain tuple and written with others in one COPY
(PostgreSQL; one INSERT elsewhere), when
REQUEST_LOG_BATCH rows are queued or the oldest has waited REQUEST_LOG_FLUSH_SECONDS (a daemon thread flushes a
quiet process, and the queue is flushed at exit). A failure to write is logged and never changes an answer; rows
of a crashed process are lost, which a diagnosis log can afford. With REQUEST_LOG_BATCH = 1 (the tests) each row
is written at once.

Read back a page at a time, filtered (api_calls_list): the dashboard's logs page and route, and the CLI's."""

import atexit
import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.db.models import Count, Q
from django.utils import timezone

from core.api.query import iso
from core.redaction import email_mask, redact
from core.sql import rows_copy

from .models import ApiCall, ProgramKey

logger = logging.getLogger("svc.calllog")

# Body fields an excerpt may keep (strings cut to EXCERPT_TEXT_MAX). Keys, tokens and free text are not among them;
# an email is kept masked (EMAIL_FIELDS). Whatever a kept value holds is redacted all the same (core.redaction):
# a customer_key may be an email, a refund reason may quote a key.
EXCERPT_FIELDS = (
    "program_id",
    "transaction_id",
    "click_id",
    "customer_key",
    "amount_cents",
    "currency",
    "sale_type",
    "provider",
    "subscription_interval",
    "payment_status",
    "refund_id",
    "reason",
    "event_type",
    "affiliate_url",
    "page_url",
    "referrer_url",
    "session_id",
    "test_mode",
)
EMAIL_FIELDS = ("email",)
EXCERPT_TEXT_MAX = 200
# A kept string is redacted before it is cut to EXCERPT_TEXT_MAX, so the cut never leaves part of an email or a key
# unmasked; text beyond this is dropped unread (a body is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE, not by this).
EXCERPT_TEXT_READ = 4096


# Field names the log itself writes: nothing to redact in them.
_NAMED_FIELDS = frozenset((*EXCERPT_FIELDS, *EMAIL_FIELDS, "retired_key", "replaced_on"))


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return value[:EXCERPT_TEXT_READ]
    if isinstance(value, bool | int | float) or value is None:
        return value
    return f"<{type(value).__name__}>"


def _cut(value: Any) -> Any:
    return value[:EXCERPT_TEXT_MAX] if isinstance(value, str) else value


def excerpt_redacted(excerpt: dict[str, Any]) -> dict[str, Any]:
    """The excerpt as a row keeps it: every string in it, at any depth and dict keys included, through
    core.redaction.redact, then cut to EXCERPT_TEXT_MAX. The one rule for rows being written and for the rows
    written before it (migration 0009)."""
    return {
        field if field in _NAMED_FIELDS else _cut(redact(field)): _cut(redact(value))
        for field, value in excerpt.items()
    }


def body_excerpt(data: Any) -> dict[str, Any]:
    """The allow-listed fields of a request body or query (a dict); anything else gives {}."""
    if not isinstance(data, dict):
        return {}
    excerpt = {field: _safe(data[field]) for field in EXCERPT_FIELDS if field in data}
    for field in EMAIL_FIELDS:
        if isinstance(data.get(field), str) and data[field]:
            excerpt[field] = email_mask(data[field])
    return excerpt


def error_of(body: Any) -> tuple[str, str]:
    """(error.code, error.message) of an error body in either envelope; ("", "") otherwise."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "", ""
    return str(error.get("code") or "")[:64], str(error.get("message") or "")[:300]


# The columns a queued row holds, in order (excerpt as a dict).
ROW_COLUMNS = (
    "program_id",
    "created_at",
    "method",
    "route",
    "status",
    "error_code",
    "message",
    "request_id",
    "key_masked",
    "key_mode",
    "latency_ms",
    "excerpt",
)
_EXCERPT = ROW_COLUMNS.index("excerpt")
_Row = tuple[Any, ...]


def _rows_write(rows: list[_Row]) -> None:
    """The rows as they are, the excerpt as JSON text (core.sql.rows_copy: one COPY on PostgreSQL)."""
    rows_copy(
        ApiCall, ROW_COLUMNS, [(*row[:_EXCERPT], json.dumps(row[_EXCERPT]), *row[_EXCERPT + 1 :]) for row in rows]
    )


class _Queue:
    def __init__(self) -> None:
        self.rows: list[_Row] = []
        self.oldest = 0.0
        self.lock = threading.Lock()
        self.flusher: threading.Thread | None = None

    def add(self, row: _Row) -> None:
        with self.lock:
            if not self.rows:
                self.oldest = time.monotonic()
            self.rows.append(row)
            due = len(self.rows) >= settings.REQUEST_LOG_BATCH or self._stale()
        if due:
            self.flush()
        elif self.flusher is None:
            self._start_flusher()

    def _stale(self) -> bool:
        return bool(self.rows) and time.monotonic() - self.oldest >= settings.REQUEST_LOG_FLUSH_SECONDS

    def flush(self) -> int:
        with self.lock:
            rows, self.rows = self.rows, []
        if not rows:
            return 0
        try:
            _rows_write(rows)
        except DatabaseError:
            # The log is a diagnosis aid: it never turns an answered call into a failure.
            logger.exception("calllog.write_failed", extra={"rows": len(rows)})
            return 0
        return len(rows)

    def _start_flusher(self) -> None:
        with self.lock:
            if self.flusher is not None:
                return
            self.flusher = threading.Thread(target=self._flush_when_stale, name="calllog-flusher", daemon=True)
        self.flusher.start()

    def _flush_when_stale(self) -> None:
        while True:
            time.sleep(settings.REQUEST_LOG_FLUSH_SECONDS)
            with self.lock:
                stale = self._stale()
            if stale:
                self.flush()
                close_old_connections()


_queue = _Queue()
atexit.register(_queue.flush)


def api_calls_flush() -> int:
    """Writes the rows this process has queued (a reader in the same process sees them all). Returns how many."""
    return _queue.flush()


def api_call_record(
    *,
    program_id: int | None,
    method: str,
    route: str,
    status: int,
    body: Any,
    request_id: str,
    key: ProgramKey | None,
    latency_ms: int,
    excerpt: dict[str, Any],
    refused_key: tuple[str, str] = ("", ""),
) -> None:
    """Queues the call's row. `refused_key`: (what to show, mode) of a key sent that did not authenticate the call
    (past its rotation deadline, or replaced: "replaced key ending …1234"), when `key` is None."""
    code, message = error_of(body)
    # Every text of the row passes the redaction, not only the excerpt: a message may quote what was sent.
    _queue.add(
        (
            program_id,
            timezone.now(),
            method[:8],
            redact(route)[:64],
            status,
            code,
            redact(message)[:300],
            redact(request_id)[:64],
            key.masked if key else refused_key[0][:40],
            key.mode if key else refused_key[1][:8],
            max(0, latency_ms),
            excerpt_redacted(excerpt),
        )
    )


def api_calls_purge(*, now: datetime | None = None) -> int:
    """Deletes what the retention allows no longer: rows older than the retention, then each program's rows
    beyond the newest REQUEST_LOG_MAX_ROWS. Returns how many rows went."""
    now = now or timezone.now()
    deleted, _ = ApiCall.objects.filter(
        created_at__lt=now - timedelta(days=settings.REQUEST_LOG_RETENTION_DAYS)
    ).delete()
    limit = settings.REQUEST_LOG_MAX_ROWS
    crowded = ApiCall.objects.values("program_id").annotate(rows=Count("id")).filter(rows__gt=limit)
    for row in crowded:
        newest = ApiCall.objects.filter(program_id=row["program_id"]).order_by("-id").values_list("id", flat=True)
        cutoff = newest[limit - 1 : limit].get()
        extra, _ = ApiCall.objects.filter(program_id=row["program_id"], id__lt=cutoff).delete()
        deleted += extra
    return deleted


# --- Reading the log ------------------------------------------------------------------------------------------

LOGS_PAGE_SIZE_MAX = 100


@dataclass(frozen=True)
class LogsFilter:
    """Filters of the request log. `status`: a class ("4xx") or an exact code ("404")."""

    status: str = ""
    route: str = ""
    error_code: str = ""
    since: datetime | None = None
    until: datetime | None = None

    def q(self) -> Q:
        condition = Q()
        if self.status.endswith("xx"):
            low = int(self.status[0]) * 100
            condition &= Q(status__gte=low, status__lt=low + 100)
        elif self.status:
            condition &= Q(status=int(self.status))
        if self.route:
            condition &= Q(route=self.route)
        if self.error_code:
            condition &= Q(error_code=self.error_code)
        if self.since is not None:
            condition &= Q(created_at__gte=self.since)
        if self.until is not None:
            condition &= Q(created_at__lte=self.until)
        return condition


# What a listing reads of a row: its id, then what was written but the program (the listing is per program).
_API_CALL_FIELDS = ("id", *ROW_COLUMNS[1:])


def api_calls_list(
    *, program_id: int, filters: LogsFilter, limit: int, cursor: int | None = None, after: int | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """The program's logged calls and the cursor of the next page (None on the last). Newest first, older pages
    by `cursor` (the id the previous page ended after); with `after`, the rows newer than that id, oldest first
    (what a follower has not seen yet). One query per page: limit + 1 rows tell whether another page exists.
    Rows this process has queued are written first (api_calls_flush), so a call just answered here is listed."""
    api_calls_flush()
    rows = ApiCall.objects.filter(filters.q(), program_id=program_id)
    if after is not None:
        rows = rows.filter(id__gt=after).order_by("id")
    else:
        rows = rows.order_by("-id")
        if cursor is not None:
            rows = rows.filter(id__lt=cursor)
    items = list(rows.values(*_API_CALL_FIELDS)[: limit + 1])
    more = len(items) > limit
    items = items[:limit]
    for item in items:
        item["created_at"] = iso(item["created_at"])
    return items, (str(items[-1]["id"]) if more else None)
