"""The click sources report: top referrer domains and utm_source values of a program's live counted clicks."""

from collections import Counter
from datetime import date, timedelta
from typing import Any

from django.db.models import Q

from core.api.query import TimeBounds, day_start
from programs.models import Program
from tracking.models import ClickEvent
from tracking.services.tracker import referrer_domain_of, utm_params_of

from .clicks import COUNTED_CLICKS

# The sources report reads at most this many of the range's newest live clicks (see click_sources_get).
SOURCES_CLICK_LIMIT = 10_000
SOURCES_TOP = 20


def click_sources_get(*, program: Program, date_from: date, date_to: date, limit: int | None = None) -> dict[str, Any]:
    """Top referrer domains and utm_source values of the program's live clicks in the inclusive UTC range.

    Domains and utm values live inside URLs, which SQL cannot parse portably, so this reads the range's
    newest `limit` clicks (one indexed query, two text columns) and counts in Python. A busier range is
    reported over that sample, and `sample.truncated` says so."""
    limit = limit or SOURCES_CLICK_LIMIT
    window = TimeBounds(start=day_start(date_from), end=day_start(date_to + timedelta(days=1)), end_exclusive=True)
    rows = list(
        ClickEvent.objects.filter(Q(program=program, is_test=False) & COUNTED_CLICKS & window.q("click_timestamp"))
        .order_by("-click_timestamp", "-id")
        .values_list("referrer_url", "page_url")[: limit + 1]
    )
    truncated = len(rows) > limit
    rows = rows[:limit]
    domains: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for referrer_url, page_url in rows:
        domains[referrer_domain_of(referrer_url) or "(direct)"] += 1
        sources[utm_params_of(page_url)["utm_source"] or "(none)"] += 1

    def top(counter: Counter[str], name: str) -> list[dict[str, Any]]:
        ranked = sorted(counter.items(), key=lambda pair: (-pair[1], pair[0]))[:SOURCES_TOP]
        return [{name: value, "clicks": clicks} for value, clicks in ranked]

    return {
        "range": {"from": date_from.isoformat(), "to": date_to.isoformat()},
        "referrer_domains": top(domains, "domain"),
        "utm_sources": top(sources, "utm_source"),
        "sample": {"clicks": len(rows), "limit": limit, "truncated": truncated},
    }
