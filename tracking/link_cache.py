"""What a click needs to know about a referral link, cached in-process.

Every click reads its link and program; they change rarely. Entries live LINK_CACHE_SECONDS (default 5).
Saving or deleting a link or program through the ORM clears this process's cache at once; other server
processes see the change within the TTL (a link turned off may still take clicks for those seconds)."""

import time
from dataclasses import dataclass

from django.conf import settings

from programs.models import ReferralLink


@dataclass(frozen=True)
class LinkTarget:
    pk: int
    short_link: str
    partner_id: int | None
    program_id: int | None
    is_active: bool
    cookie_window_days: int | None


_entries: dict[str, tuple[float, LinkTarget]] = {}


def link_target_get(code: str) -> LinkTarget | None:
    now = time.monotonic()
    hit = _entries.get(code)
    if hit is not None and hit[0] > now:
        return hit[1]
    row = (
        ReferralLink.objects.filter(short_link=code)
        .values_list("pk", "short_link", "partner_id", "program_id", "is_active", "program__cookie_duration")
        .first()
    )
    if row is None:
        return None
    target = LinkTarget(*row)
    if settings.LINK_CACHE_SECONDS > 0:
        _entries[code] = (now + settings.LINK_CACHE_SECONDS, target)
    return target


def link_cache_clear(**_signal_kwargs: object) -> None:
    _entries.clear()
