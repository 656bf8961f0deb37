"""What `svc listen` reads: a program's events after a cursor (the event's row id), oldest first.

The CLI polls (GET /api/v1/cli/programs/{id}/webhook-events, docs/cli.md) rather than holding a connection open,
because the web tier runs gunicorn sync workers: a long-poll or server-sent-events stream would keep a whole
worker busy for as long as someone listens."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Max
from django.utils import timezone

from .models import WebhookEvent

LISTEN_PAGE_MAX = 100
# Ids are handed out at INSERT but rows become visible at COMMIT, so two events committing at about the same time
# can appear in the other order: a reader that has seen id 11 and moved its cursor past it would never see id 10
# committing a moment later. An event is therefore handed out only once it is this old (created_at is set just
# before the INSERT, and the transactions that emit events commit within milliseconds), and a page stops at the
# first event that is not, so the cursor never passes one that may still be uncommitted below it.
LISTEN_SETTLE = timedelta(seconds=1)


@dataclass(frozen=True)
class ListenPage:
    events: list[WebhookEvent]
    # Where the next read starts: past every event looked at, including those the type filter left out.
    cursor: int
    # A full page was read: more settled events may follow at once.
    has_more: bool


def webhook_event_cursor(*, program_id: int) -> int:
    """The id of the program's newest event (0 for none): a listener starting now reads after it."""
    return WebhookEvent.objects.filter(program_id=program_id).aggregate(newest=Max("id"))["newest"] or 0


def webhook_events_after(
    *,
    program_id: int,
    after: int,
    types: frozenset[str] | None = None,
    limit: int = LISTEN_PAGE_MAX,
    now: datetime | None = None,
) -> ListenPage:
    """The program's events (live and test mode) with id above `after`, oldest first, at most `limit` looked at,
    only those of `types` when given. One query on the (program, -id) index."""
    settled_before = (now or timezone.now()) - LISTEN_SETTLE
    rows = list(WebhookEvent.objects.filter(program_id=program_id, pk__gt=after).order_by("pk")[:limit])
    cursor = after
    events: list[WebhookEvent] = []
    for event in rows:
        if event.created_at > settled_before:
            return ListenPage(events=events, cursor=cursor, has_more=False)
        cursor = event.pk
        if types is None or event.type in types:
            events.append(event)
    return ListenPage(events=events, cursor=cursor, has_more=len(rows) == limit)
