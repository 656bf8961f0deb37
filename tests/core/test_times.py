"""core.times.utc_text: one time format in prose, the dashboard's ("2026-01-31 14:05:09 UTC")."""

from datetime import UTC, datetime, timedelta, timezone

from core.times import utc_text


def test_a_time_reads_in_utc_to_the_second():
    assert utc_text(datetime(2026, 1, 31, 14, 5, 9, 123456, tzinfo=UTC)) == "2026-01-31 14:05:09 UTC"


def test_another_zone_is_shown_in_utc():
    paris = timezone(timedelta(hours=1))
    assert utc_text(datetime(2026, 1, 1, 0, 30, tzinfo=paris)) == "2025-12-31 23:30:00 UTC"


def test_no_time():
    assert utc_text(None) == "none yet"
    assert utc_text(None, missing="?") == "?"
