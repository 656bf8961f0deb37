"""Query-string fields shared by every API surface (dashboard, agent, CLI, program-key reports): plain-digit
integers, ISO 8601 instants and days, and the time bounds they make. Query strings are checked strictly ("2.0" is not
a page number) and every failure names the parameter; an empty parameter (`?eventType=`) counts as absent, as
dashboard filter forms send."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Q
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

ID_MAX = 2**63 - 1  # a bigint: a larger id or cursor is a bad request, not a database error

_DIGITS = re.compile(r"^[0-9]+$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
# "+02:00" in an unencoded query string arrives as " 02:00": put the plus back.
_LOST_PLUS = re.compile(r"^(.+[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?) ([0-9]{2}(?::?[0-9]{2})?)$")


def present(query: Any) -> dict[str, str]:
    """A query dict without empty values (the last value of a repeated parameter wins)."""
    return {name: value for name, value in query.items() if value != ""}


@dataclass(frozen=True)
class Instant:
    """A parsed ISO 8601 bound: a whole day when a date was given, else an exact aware time (UTC if naive)."""

    value: datetime
    is_date: bool


def parse_instant(raw: Any) -> Instant | None:
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if _DATE.match(text):
        try:
            return Instant(datetime.combine(date.fromisoformat(text), datetime.min.time(), tzinfo=UTC), True)
        except ValueError:
            return None
    text = _LOST_PLUS.sub(r"\1+\2", text)
    if "T" not in text and " " not in text:
        return None  # basic formats like 20240105 read too much like a typo to guess at
    try:
        value = datetime.fromisoformat(text)
        # In UTC, as the database compares it: an offset at the calendar's ends can leave it (year 0 or 10000).
        value = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return Instant(value, False)


def parse_day(raw: Any) -> date | None:
    if not isinstance(raw, str) or not _DATE.match(raw.strip()):
        return None
    try:
        return date.fromisoformat(raw.strip())
    except ValueError:
        return None


@extend_schema_field({"type": "integer", "minimum": 1})
class QueryIntegerField(serializers.Field[int, str, int, Any]):
    """A whole number written in plain digits, within [min_value, max_value]."""

    def __init__(
        self, *, min_value: int, max_value: int | None = None, invalid: str, too_big: str = "", **kwargs: Any
    ) -> None:
        self.min_value, self.max_value, self.invalid, self.too_big = min_value, max_value, invalid, too_big
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, str) or not _DIGITS.match(data.strip()):
            raise serializers.ValidationError(self.invalid)
        try:
            value = int(data.strip())
        except ValueError:  # more digits than Python converts
            raise serializers.ValidationError(self.too_big or self.invalid) from None
        if value < self.min_value:
            raise serializers.ValidationError(self.invalid)
        if self.max_value is not None and value > self.max_value:
            raise serializers.ValidationError(self.too_big)
        return value

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "integer", "minimum": 0})
class QueryIdAfterField(QueryIntegerField):
    """A row id to list after: 0 means from the start."""


@extend_schema_field({"type": "string", "format": "date-time", "description": "ISO 8601 date or date-time"})
class InstantField(serializers.Field[Instant, str, Instant, Any]):
    """An ISO 8601 date (a whole UTC day) or date-time (naive = UTC)."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        self.message = message
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Instant:
        instant = parse_instant(data)
        if instant is None:
            raise serializers.ValidationError(self.message)
        return instant

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "string", "format": "date"})
class DayField(serializers.Field[date, str, date, Any]):
    def __init__(self, *, message: str, **kwargs: Any) -> None:
        self.message = message
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> date:
        day = parse_day(data)
        if day is None:
            raise serializers.ValidationError(self.message)
        return day

    def to_representation(self, value: Any) -> Any:
        return value


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


@dataclass(frozen=True)
class TimeBounds:
    """Inclusive bounds on an event's own time field; None means open."""

    start: datetime | None = None
    end: datetime | None = None
    # A date given as the upper bound covers its whole day: the bound is the next midnight, exclusive.
    end_exclusive: bool = False

    def q(self, field: str) -> Q:
        condition = Q()
        if self.start is not None:
            condition &= Q(**{f"{field}__gte": self.start})
        if self.end is not None:
            condition &= Q(**{f"{field}__lt" if self.end_exclusive else f"{field}__lte": self.end})
        return condition

    @property
    def is_empty(self) -> bool:
        """The start is past the end: no time is within the bounds."""
        if self.start is None or self.end is None:
            return False
        return self.start >= self.end if self.end_exclusive else self.start > self.end

    @property
    def end_inclusive(self) -> datetime | None:
        """The last instant within the bounds, for a reader that takes an inclusive end."""
        if self.end is None or not self.end_exclusive:
            return self.end
        return self.end - timedelta(microseconds=1)


def day_end(day_start: datetime) -> datetime:
    """The end (exclusive) of the UTC day starting at `day_start`: the next midnight, or, for the calendar's last
    day, which has none, its last instant."""
    try:
        return day_start + timedelta(days=1)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def time_bounds(since: Instant | None, until: Instant | None) -> TimeBounds:
    """The bounds between two optional instants, both inclusive; a date as `until` covers its whole day (up to the
    next midnight, exclusive)."""
    if until is None:
        return TimeBounds(start=since.value if since else None)
    return TimeBounds(
        start=since.value if since else None,
        end=day_end(until.value) if until.is_date else until.value,
        end_exclusive=until.is_date,
    )


def query_time_bounds(attrs: Mapping[str, Any], since: str, until: str, *, reversed_message: str) -> TimeBounds:
    """The time bounds of a query's two optional InstantFields, named `since` and `until` (a query serializer's
    validated attrs; see time_bounds); a ValidationError of `reversed_message` (400) when they leave no time between
    them. For a query serializer's validate()."""
    bounds = time_bounds(attrs.get(since), attrs.get(until))
    if bounds.is_empty:
        raise serializers.ValidationError(reversed_message)
    return bounds
