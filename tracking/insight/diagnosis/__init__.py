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


@dataclass(frozen=True)
class Mistake:
    code: str  # stable, e.g. "sale_customer_key_without_lead"
    title: str  # what went wrong, in one line
    count: int  # how often in the window
    last_seen_at: datetime | None
    fix: str  # what to do, concretely
    docs: str = ""  # a docs anchor, e.g. "/docs/errors#customer_not_found"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["last_seen_at"] = self.last_seen_at.isoformat() if self.last_seen_at else None
        return data


Detector = Callable[[Program, datetime, datetime], Mistake | None]
DETECTORS: list[Detector] = []


def detector(function: Detector) -> Detector:
    """Registers a detector (in import order: the order readiness lists mistakes in)."""
    DETECTORS.append(function)
    return function


def mistakes_find(*, program: Program, now: datetime) -> list[Mistake]:
    """Every mistake seen for the program in the last DIAGNOSIS_WINDOW, most recent first."""
    api_calls_flush()  # this process's queued calls count too
    since = now - DIAGNOSIS_WINDOW
    found = [mistake for detect in DETECTORS if (mistake := detect(program, since, now)) is not None]
    return sorted(found, key=lambda m: m.last_seen_at or since, reverse=True)


from . import calls, keys_and_stripe  # noqa: E402,F401  (registers their detectors)
