"""What every click and sale reads and what rarely changes, cached in-process: a referral link's routing
facts, which partners are enrolled in which programs and in which group (groups.terms), partners' emails (the
self_referral rule) and programs' link aliases.

Entries live LINK_CACHE_SECONDS (default 5). Saving or deleting a link, program or enrolment through the ORM
clears this process's cache at once; other server processes see the change within the TTL (a link turned
off may still take clicks, an enrolment just removed may still let a sale be attributed, for those seconds).
Only enrolments that exist are cached, so a new enrolment counts at once everywhere.

A new visitor's click checks the link's row inside its own INSERT (tracking.services.click.link_guard), so it may
use a link's facts for LINK_CACHE_VERIFIED_SECONDS (default 600): the long tail of a program's links stays cached
without a query per click, and a change made elsewhere still stops that click at once (the INSERT inserts nothing,
and the click is decided again from a fresh read). At most LINK_CACHE_MAX_ENTRIES links are kept."""

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from groups.terms import terms_cache_clear
from programs.link_aliases import link_aliases_of
from programs.models import Partner, Program

from .sql import link_target_sql


@dataclass(frozen=True)
class LinkTarget:
    pk: int
    short_link: str
    partner_id: int | None
    program_id: int | None
    is_active: bool
    cookie_window_days: int | None


_entries: dict[str, tuple[float, LinkTarget]] = {}  # code -> (when read, facts)
_partner_emails: dict[int, tuple[float, str]] = {}
_program_aliases: dict[int, tuple[float, tuple[str, ...] | None]] = {}


def link_target_get(code: str, *, verified: bool = False) -> LinkTarget | None:
    """The link's facts, read at most LINK_CACHE_SECONDS ago, or, for a caller whose INSERT checks the link's row
    (`verified`), at most LINK_CACHE_VERIFIED_SECONDS ago. None for an unknown code (never cached)."""
    now = time.monotonic()
    hit = _entries.get(code)
    max_age = settings.LINK_CACHE_VERIFIED_SECONDS if verified else settings.LINK_CACHE_SECONDS
    if hit is not None and now - hit[0] < min(max_age, _verified_limit()):
        return hit[1]
    with connection.cursor() as cursor:
        cursor.execute(link_target_sql(), [code])
        row = cursor.fetchone()
    if row is None:
        return None
    target = LinkTarget(*row)
    if settings.LINK_CACHE_SECONDS > 0:
        if len(_entries) >= settings.LINK_CACHE_MAX_ENTRIES:
            _entries.clear()  # rare: more links in use than the bound; they are read again as clicks come
        _entries[code] = (now, target)
    return target


def link_target_forget(code: str) -> None:
    """Drops a link whose cached facts its row no longer matches (the verified INSERT inserted nothing)."""
    _entries.pop(code, None)


def _verified_limit() -> float:
    # LINK_CACHE_SECONDS = 0 turns the cache off for every caller.
    return settings.LINK_CACHE_VERIFIED_SECONDS if settings.LINK_CACHE_SECONDS > 0 else 0.0


def partner_email_get(partner_id: int) -> str:
    """The partner's email ("" for none, or no such partner)."""
    now = time.monotonic()
    hit = _partner_emails.get(partner_id)
    if hit is not None and hit[0] > now:
        return hit[1]
    email = Partner.objects.filter(pk=partner_id).values_list("email", flat=True).first() or ""
    if settings.LINK_CACHE_SECONDS > 0:
        _partner_emails[partner_id] = (now + settings.LINK_CACHE_SECONDS, email)
    return email


def program_aliases_get(program_id: int) -> tuple[str, ...] | None:
    """The program's link aliases in their order (programs.link_aliases); None when no program has the id. Read
    only for a landing URL with neither aff nor via, so the common click never pays for it."""
    now = time.monotonic()
    hit = _program_aliases.get(program_id)
    if hit is not None and hit[0] > now:
        return hit[1]
    stored = Program.objects.filter(pk=program_id).values_list("link_aliases", flat=True).first()
    aliases = None if stored is None else link_aliases_of(stored)
    if settings.LINK_CACHE_SECONDS > 0:
        if len(_program_aliases) >= settings.LINK_CACHE_MAX_ENTRIES:
            _program_aliases.clear()
        _program_aliases[program_id] = (now + settings.LINK_CACHE_SECONDS, aliases)
    return aliases


def link_cache_clear(**_signal_kwargs: object) -> None:
    terms_cache_clear()
    _program_aliases.clear()
    _entries.clear()
    _partner_emails.clear()
