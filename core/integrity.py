"""The invariants an auditor checks on the money records, and the runner behind `manage.py verify_integrity` and
beat's daily core.verify_integrity (docs/integrity.md).

core knows no feature app: each app registers the checks of its own data in its AppConfig.ready()
(integrity_check_register), so each invariant lives beside the rows it is about. A check answers the rows that
break its invariant, as a QuerySet or as SQL (Sql), each row naming itself (`ref`: an id) and its program. The
runner counts them in one statement per check (the check is an aggregate or an anti-join over its tables, never a
loop over rows) and only for a check that fails reads up to `examples` refs and how many rows each program has
(core.statements.offending_sql). A check written as SQL lives in its app's SQL module (tests/core/test_sql_homes.py):
the app's integrity.py for commissions and payouts, whose only SQL the checks are."""

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import F, QuerySet
from django.utils import timezone

from core import messages
from core.models import IntegrityRun
from core.statements import PROGRAM, REF, offending_sql
from core.tasks import service_task
from core.times import utc_text

# At most this many programs are named per failed check (readiness reads its own program's count there).
PROGRAMS_KEPT = 1000
# Rows this close to the webhook events' retention edge are not asked for their event: the hourly prune may be
# dropping it while the check runs.
RETENTION_MARGIN = timedelta(hours=1)
# The readiness item warns when the latest run is older than this (beat runs the checks daily).
STALE_AFTER = timedelta(days=2)


@dataclass(frozen=True)
class Sql:
    """Offending rows as SQL selecting `integrity_ref` and `integrity_program` (plain SQL, PostgreSQL and
    SQLite alike)."""

    sql: str
    params: Sequence[Any] = ()


@dataclass(frozen=True)
class CheckContext:
    now: datetime
    # Rows created since then have their webhook events: the outbox existed, and retention has not pruned them.
    events_since: datetime


@dataclass(frozen=True)
class IntegrityCheck:
    id: str
    # What breaks the invariant, said of the rows (`noun`, "commission(s)"): "whose ledger entries do not add up …".
    title: str
    noun: str
    offenders: Callable[[CheckContext], "QuerySet[Any] | Sql"]
    # For a QuerySet: the field naming each row and its program.
    ref: str = "pk"
    program: str = "program_id"


integrity_checks: list[IntegrityCheck] = []


def integrity_check_register(*checks: IntegrityCheck) -> None:
    """Adds each check once (an app's ready() may run again in tests): a check of the same id is replaced."""
    for check in checks:
        integrity_checks[:] = [known for known in integrity_checks if known.id != check.id]
        integrity_checks.append(check)


@dataclass
class CheckFailure:
    check: str
    title: str
    noun: str
    count: int
    examples: list[Any]
    # program id (as text, as JSON keeps it) -> how many of the rows are the program's.
    programs: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        shown = ", ".join(str(ref) for ref in self.examples)
        more = f" (first {len(self.examples)})" if self.count > len(self.examples) else ""
        return f"FAIL {self.check}: {self.count} {self.noun} {self.title}: {shown}{more}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class IntegrityReport:
    checked_at: datetime
    seconds: float
    checks: list[str]
    failures: list[CheckFailure]
    # check id -> seconds it took (counting, and for a failure its examples)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "checked_at": self.checked_at.isoformat(),
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "checks": self.checks,
            "failures": [failure.as_dict() for failure in self.failures],
            "timings": {check: round(seconds, 3) for check, seconds in self.timings.items()},
        }


def events_since(now: datetime) -> datetime:
    """Since when money rows must have their webhook events: not before the outbox's table existed (rows older
    than it never had one), nor before the retention window (the prune dropped older events)."""
    retained = now - timedelta(days=settings.WEBHOOK_EVENT_RETENTION_DAYS) + RETENTION_MARGIN
    applied = (
        MigrationRecorder.Migration.objects.filter(app="webhooks", name="0001_initial")
        .values_list("applied", flat=True)
        .first()
    )
    return max(retained, applied or now)


def _inner(check: IntegrityCheck, context: CheckContext) -> tuple[str, Sequence[Any]]:
    found = check.offenders(context)
    if isinstance(found, Sql):
        return found.sql, found.params
    rows = found.order_by().annotate(**{REF: F(check.ref), PROGRAM: F(check.program)}).values(REF, PROGRAM)
    sql, params = rows.query.sql_with_params()
    return sql, params


def _rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def check_run(check: IntegrityCheck, context: CheckContext, *, examples: int = 10) -> CheckFailure | None:
    inner, params = _inner(check, context)
    count_sql, refs_sql, programs_sql = offending_sql(inner)
    [(count,)] = _rows(count_sql, params)
    if not count:
        return None
    refs = _rows(refs_sql, [*params, examples])
    programs = _rows(programs_sql, [*params, PROGRAMS_KEPT])
    return CheckFailure(
        check=check.id,
        title=check.title,
        noun=check.noun,
        count=count,
        examples=[ref for (ref,) in refs],
        programs={str(program): n for program, n in programs},
    )


def integrity_verify(
    *, now: datetime | None = None, examples: int = 10, only: Sequence[str] | None = None
) -> IntegrityReport:
    """Runs every registered check (or those `only` names) and answers what failed."""
    now = now or timezone.now()
    context = CheckContext(now=now, events_since=events_since(now))
    chosen = [check for check in integrity_checks if not only or check.id in only]
    unknown = sorted(set(only or ()) - {check.id for check in integrity_checks})
    if unknown:
        raise ValueError(messages.INTEGRITY_UNKNOWN_CHECKS.format(checks=", ".join(unknown)))
    started = time.monotonic()
    failures: list[CheckFailure] = []
    timings: dict[str, float] = {}
    for check in chosen:
        began = time.monotonic()
        failure = check_run(check, context, examples=examples)
        timings[check.id] = time.monotonic() - began
        if failure is not None:
            failures.append(failure)
    return IntegrityReport(
        checked_at=now,
        seconds=time.monotonic() - started,
        checks=[check.id for check in chosen],
        failures=failures,
        timings=timings,
    )


def integrity_run_record(report: IntegrityReport) -> IntegrityRun:
    """Stores the report as an IntegrityRun (what the readiness item and the admin show)."""
    return IntegrityRun.objects.create(
        started_at=report.checked_at,
        seconds=report.seconds,
        passed=report.passed,
        checks=len(report.checks),
        failures=[failure.as_dict() for failure in report.failures],
    )


# Its own limits: the project's 100 s would stop it near six million sales (about 16 s a million here).
@service_task("core.verify_integrity", soft_time_limit=1800, time_limit=1860)
def integrity_verify_task() -> bool:
    """Beat's daily run (CELERY_BEAT_SCHEDULE "verify-integrity"), stored for the readiness checklist and the admin.
    Whether it passed is its result: a failed invariant is no error to retry. Declared here, not in core.tasks (the
    module every app's tasks import): the apps import this module when they register their checks, so the worker
    knows the task once Django is set up."""
    return bool(integrity_run_record(integrity_verify()).passed)


def integrity_readiness(program: Any) -> dict[str, str] | None:
    """The readiness checklist's "Integrity" item (one of insight.readiness's providers): the latest
    run, when, and whether this program's records held every invariant; only this program's counts are told. None
    before the first run."""
    run = IntegrityRun.objects.order_by("-started_at", "-pk").first()
    if run is None:
        return None
    when = utc_text(run.started_at)
    mine = [
        (failure["check"], failure["programs"][str(program.pk)])
        for failure in run.failures
        if str(program.pk) in failure.get("programs", {})
    ]
    fields = {"id": "integrity", "title": messages.INTEGRITY_TITLE}
    if mine:
        listed = "; ".join(f"{check} ({count})" for check, count in mine)
        return {
            **fields,
            "status": "fail",
            "detail": messages.INTEGRITY_FAILED.format(when=when, failed=len(mine), checks=run.checks, listed=listed),
            "next_step": messages.INTEGRITY_FAILED_STEP,
        }
    if timezone.now() - run.started_at > STALE_AFTER:
        return {
            **fields,
            "status": "warn",
            "detail": messages.INTEGRITY_STALE.format(when=when),
            "next_step": messages.INTEGRITY_STALE_STEP,
        }
    return {**fields, "status": "pass", "detail": messages.INTEGRITY_PASSED.format(when=when, checks=run.checks)}
