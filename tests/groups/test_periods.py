"""Period keys and bounds: calendar months and quarters in UTC, and all time."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from groups.periods import period_bounds, period_current, period_key, period_last_complete


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("period", "when", "key"),
    [
        ("month", at(2026, 12, 31, 23, 59, 59), "2026-12"),
        ("month", at(2027, 1, 1), "2027-01"),
        ("quarter", at(2026, 12, 31, 23, 59), "2026-Q4"),
        ("quarter", at(2026, 4, 1), "2026-Q2"),
        ("quarter", at(2026, 3, 31, 23, 59), "2026-Q1"),
        ("lifetime", at(2026, 12, 2), "all"),
    ],
)
def test_the_key_of_the_period_containing_a_moment(period, when, key):
    assert period_key(period, when) == key


def test_keys_are_utc_whatever_the_moment_s_zone():
    # 2027-01-01 01:00 in UTC+2 is still 2026-12-31 in UTC.
    plus_two = timezone(timedelta(hours=2))
    assert period_key("month", datetime(2027, 1, 1, 1, 0, tzinfo=plus_two)) == "2026-12"
    assert period_key("quarter", datetime(2027, 1, 1, 1, 0, tzinfo=plus_two)) == "2026-Q4"


def test_bounds_include_the_start_and_exclude_the_end():
    december = period_bounds("2026-12")
    assert (december.start, december.end) == (at(2026, 12, 1), at(2027, 1, 1))
    q4 = period_bounds("2026-Q4")
    assert (q4.start, q4.end) == (at(2026, 10, 1), at(2027, 1, 1))
    q1 = period_bounds("2027-Q1")
    assert (q1.start, q1.end) == (at(2027, 1, 1), at(2027, 4, 1))
    february = period_bounds("2028-02")
    assert (february.start_day.isoformat(), february.end_day.isoformat()) == ("2028-02-01", "2028-03-01")
    lifetime = period_bounds("all")
    assert (lifetime.start, lifetime.end) == (None, None)


@pytest.mark.parametrize("key", ["2026-13", "2026-00", "2026-Q5", "2026-Q0", "26-12", "", "ALL", "2026-q4"])
def test_a_key_that_names_no_period_is_refused(key):
    with pytest.raises(ValueError):
        period_bounds(key)


def test_the_current_and_the_last_complete_period():
    now = at(2027, 1, 5, 12)
    assert period_current("month", now).key == "2027-01"
    assert period_last_complete("month", now).key == "2026-12"
    assert period_last_complete("quarter", now).key == "2026-Q4"
    assert period_last_complete("month", at(2026, 12, 1)).key == "2026-11"  # its first instant: November is done
    assert period_last_complete("quarter", at(2026, 7, 1)).key == "2026-Q2"
    with pytest.raises(ValueError):
        period_last_complete("lifetime", now)
