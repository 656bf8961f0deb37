"""Times in words, as the dashboard shows them: "2026-01-31 14:05:09 UTC" (to the second, in UTC). The dashboard's
JavaScript (formatTime in static/js/dashboard.js) and `svc` print the same; JSON keeps ISO 8601."""

from datetime import UTC, datetime


def utc_text(moment: datetime | None, *, missing: str = "none yet") -> str:
    """The moment in UTC to the second (microseconds dropped); `missing` when there is none. A naive time is taken
    as UTC already (the service stores aware times)."""
    if moment is None:
        return missing
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
