"""Readiness names each integration mistake: detectors read a program's recent calls (the request log,
programs.ApiCall), its events and keys, and each returns what went wrong, how often, when last, and the fix.

A detector is a function (program, since, now) -> Mistake | None registered in DETECTORS (see its modules). The
spec's error messages are not touched: the diagnosis they cannot give lives here."""

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from programs.calllog import api_calls_flush
from programs.models import Program

# How far back readiness looks for mistakes.
DIAGNOSIS_WINDOW = timedelta(days=7)
# Every mistake is documented under its code in docs/readiness.md, served at this path.
DOCS_PATH = "/docs/readiness"
# A "fail" mistake lost something (calls refused, events that count for nothing): it fails readiness's
# integration_mistakes check. A "warn" one was recorded, but less well than it could be.
FAIL, WARN = "fail", "warn"


@dataclass(frozen=True)
class Mistake:
    code: str  # stable, e.g. "sale_customer_key_without_lead"
    title: str  # what went wrong, in one line
    count: int  # how often in the window
    last_seen_at: datetime | None
    fix: str  # what to do, concretely
    severity: str = WARN

    @property
    def docs(self) -> str:
        """The code's section of docs/readiness.md (an example and what to do)."""
        return f"{DOCS_PATH}#{self.code}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["last_seen_at"] = self.last_seen_at.isoformat() if self.last_seen_at else None
        data["docs"] = self.docs
        return data


def _worst_first(mistake: Mistake) -> tuple[bool, int, float]:
    return (
        mistake.severity != FAIL,
        -mistake.count,
        -(mistake.last_seen_at.timestamp() if mistake.last_seen_at else 0),
    )


Detector = Callable[[Program, datetime, datetime], Mistake | None]
DETECTORS: list[Detector] = []


def detector(function: Detector) -> Detector:
    """Registers a detector (they run in import order; mistakes_find sorts what they find)."""
    DETECTORS.append(function)
    return function


def mistakes_find(*, program: Program, now: datetime) -> list[Mistake]:
    """Every mistake seen for the program in the last DIAGNOSIS_WINDOW, worst first: the ones that lost something
    (FAIL) before the others, then the most frequent, then the most recent."""
    api_calls_flush()  # this process's queued calls count too
    since = now - DIAGNOSIS_WINDOW
    found = [mistake for detect in DETECTORS if (mistake := detect(program, since, now)) is not None]
    return sorted(found, key=_worst_first)


from . import calls, keys_and_stripe  # noqa: E402,F401  (registers their detectors)
