"""The click rules applied to a click before it is stored: how it counts (bot, prefetch, human), the flags it
raises (paid_ads), and whether the duplicate rule runs on it, from when. Decided from the request alone and the
program's settings (the process cache); the duplicate probe against the stored clicks is tracking's
(tracking.sql.DUPLICATE_SQL)."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from .config import program_rules
from .rules import Rule, Traffic, ad_click_ids, request_traffic, visitor_hash


@dataclass(frozen=True)
class ClickQuality:
    """What the click rules decided before the click is stored. `duplicate_since`: when the duplicate rule runs,
    the start of its window (a counted click of the visitor on the link since then makes this one a duplicate);
    None when it does not run (rule off, or the click is not a human one)."""

    traffic: str
    flags: list[str]
    visitor_hash: str
    duplicate_since: datetime | None

    @property
    def attributed(self) -> bool:
        """Bots and prefetches are recorded without a customer: never attributed."""
        return self.traffic not in (Traffic.BOT, Traffic.PREFETCH)


def click_quality(
    *,
    program_id: int,
    ip: str,
    user_agent: str,
    is_bot_agent: bool,
    method: str,
    meta: Mapping[str, str],
    landing_query: Mapping[str, Iterable[str]],
    now: datetime,
) -> ClickQuality:
    """How the click counts, the flags it raises and when the duplicate window starts, under the program's rules:
    a rule that is off decides nothing (its click counts as human, raises no flag, is never a duplicate)."""
    rules = program_rules(program_id)
    traffic: str = Traffic.HUMAN
    if rules.on(Rule.BOT):
        traffic = request_traffic(method=method, meta=meta, is_bot_agent=is_bot_agent)
    flags = [Rule.PAID_ADS.value] if rules.on(Rule.PAID_ADS) and ad_click_ids(landing_query) else []
    duplicates = rules.on(Rule.DUPLICATE_CLICK)
    since = (
        now - timedelta(minutes=duplicates.window_minutes or 60)
        if duplicates is not None and traffic == Traffic.HUMAN
        else None
    )
    return ClickQuality(
        traffic=traffic,
        flags=flags,
        visitor_hash=visitor_hash(ip=ip, user_agent=user_agent),
        duplicate_since=since,
    )
