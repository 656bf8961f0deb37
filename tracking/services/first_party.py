"""First-party mode (docs/first-party.md): the shop's reverse proxy serves this service under a path of the shop's
own origin, so the service sets the svc_click_id cookie itself. What the services know of it: that a program's
tracker was seen in that mode (readiness says so), and the window a visit refreshes the cookie for."""

import logging
import time
from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone

from programs.models import Program

from ..models import Customer

logger = logging.getLogger("svc.tracking")

# A program's first-party calls are written down at most once per interval: readiness needs the mode, not a count.
SEEN_INTERVAL = timedelta(hours=1)
SEEN_CACHE_KEY = "first-party-seen:{program_id}"
# When this process last wrote (or found written) each program's, so most calls cost no cache round trip either.
_seen_here: dict[int, float] = {}


def first_party_seen_record(*, program_id: int) -> None:
    """Notes that a first-party call of the program was answered: an UPDATE of Program.first_party_seen_at at most
    once per SEEN_INTERVAL across processes (the cache decides which call writes). Never fails the call."""
    interval = SEEN_INTERVAL.total_seconds()
    now = time.monotonic()
    last = _seen_here.get(program_id)
    if last is not None and now - last < interval:
        return
    _seen_here[program_id] = now
    try:
        if cache.add(SEEN_CACHE_KEY.format(program_id=program_id), 1, timeout=interval):
            Program.objects.filter(pk=program_id).update(first_party_seen_at=timezone.now())
    except Exception:
        logger.exception("tracking.first_party_seen_failed", extra={"program_id": program_id})


def first_party_seen_forget() -> None:
    """Forgets what this process wrote (tests start each from nothing; the cache is theirs to clear)."""
    _seen_here.clear()


def visit_cookie_window_days(*, program_id: int, click_id: str) -> int | None:
    """The program's cookie window, in days, when click_id is a live customer's of the program (the one a lead or
    sale would attribute); None otherwise: the visit then refreshes no cookie."""
    if not click_id:
        return None
    return (
        Customer.objects.filter(click_id=click_id, program_id=program_id, is_test=False)
        .values_list("program__cookie_duration", flat=True)
        .first()
    )
