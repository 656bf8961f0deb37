"""The periods tiers and bonuses are judged over, as keys and UTC bounds: a calendar month ("2026-12"), a calendar
quarter ("2026-Q4") or all time ("all"). The key is what GroupChange and BonusAward record, so a rule or a bonus
acts once per partner and key."""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from .models import Period

LIFETIME_KEY = "all"
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_QUARTER = re.compile(r"^(\d{4})-Q([1-4])$")


@dataclass(frozen=True)
class PeriodBounds:
    """A period's key and its UTC bounds, `start` included and `end` excluded (None for all time)."""

    key: str
    start: datetime | None
    end: datetime | None

    @property
    def start_day(self) -> date | None:
        return None if self.start is None else self.start.date()

    @property
    def end_day(self) -> date | None:
        return None if self.end is None else self.end.date()


def _utc(at: datetime) -> datetime:
    return at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime:
    # Months past December roll into the next year, so a quarter's end is its last month's next.
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC)


def period_key(period: str, at: datetime) -> str:
    """The key of the `period` (a groups.models.Period) that contains `at`, in UTC."""
    at = _utc(at)
    if period == Period.MONTH:
        return f"{at.year:04d}-{at.month:02d}"
    if period == Period.QUARTER:
        return f"{at.year:04d}-Q{(at.month - 1) // 3 + 1}"
    if period == Period.LIFETIME:
        return LIFETIME_KEY
    raise ValueError(f"Unknown period: {period!r}")


def period_bounds(key: str) -> PeriodBounds:
    """The bounds of the period a key names. Raises ValueError for a key that names none."""
    if key == LIFETIME_KEY:
        return PeriodBounds(key=key, start=None, end=None)
    if match := _MONTH.match(key):
        year, month = int(match[1]), int(match[2])
        if 1 <= month <= 12:
            return PeriodBounds(key=key, start=_month_start(year, month), end=_month_start(year, month + 1))
    elif match := _QUARTER.match(key):
        year, first = int(match[1]), (int(match[2]) - 1) * 3 + 1
        return PeriodBounds(key=key, start=_month_start(year, first), end=_month_start(year, first + 3))
    raise ValueError(f"Not a period key: {key!r}")


def period_current(period: str, at: datetime) -> PeriodBounds:
    """The period containing `at` (so far: its end is still to come)."""
    return period_bounds(period_key(period, at))


def period_last_complete(period: str, at: datetime) -> PeriodBounds:
    """The calendar period that ended last before `at` (the month or quarter before the current one). All time is
    never complete: ValueError."""
    if period == Period.LIFETIME:
        raise ValueError("All time has no complete period")
    current = period_current(period, at)
    assert current.start is not None
    return period_current(period, current.start - timedelta(microseconds=1))
