"""Failed sign-ins counted per account, whatever the client address (issue 37): a limit per address alone let 40
wrong passwords from 40 addresses through, and then the right one signed in.

Every failed password for an identifier (a portal account's email, a dashboard username), trimmed and lower-cased,
is counted; the failure that reaches SIGN_IN_LOCK_FAILURES within SIGN_IN_LOCK_WINDOW_SECONDS locks the identifier
for SIGN_IN_LOCK_SECONDS, during which every sign-in with it is refused unchecked, the right password too. An
identifier that has no account is counted and locked the same way, and a lock's answer is the same for both, so it
tells nothing of which accounts exist.

Counted with django-ratelimit in the rate-limit cache (per server instance unless RATELIMIT_SHARED=true, like the
other limits), under a digest of the identifier: the cache holds no email. RATELIMIT_ENABLE=false turns it off."""

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django_ratelimit.core import get_usage

PORTAL = "portal"
DASHBOARD = "dashboard"

SIGN_IN_LOCKED = "Too many failed sign-ins with this {name}. Try again in {wait}."


def _digest(scope: str, identifier: str) -> str:
    return hashlib.sha256(f"{scope}:{identifier.strip().lower()}".encode()).hexdigest()


def _lock_key(scope: str, identifier: str) -> str:
    return f"sign-in-lock:{_digest(scope, identifier)}"


def sign_in_lock_seconds_left(scope: str, identifier: str) -> int:
    """Seconds until the identifier's lock ends; 0 when it is not locked."""
    if not settings.RATELIMIT_ENABLE:
        return 0
    # The lock's end is kept as its value, not only as the key's expiry: every cache backend reads it alike.
    until = caches[settings.RATELIMIT_USE_CACHE].get(_lock_key(scope, identifier))
    if not isinstance(until, int | float):
        return 0
    return max(0, math.ceil(until - time.time()))


def sign_in_failed(request: HttpRequest | None, scope: str, identifier: str) -> None:
    """Counts one failed sign-in for the identifier; the one that reaches SIGN_IN_LOCK_FAILURES locks it."""
    digest = _digest(scope, identifier)
    usage = get_usage(
        request,
        group=f"sign-in-failures-{scope}",
        key=lambda _group, _request: digest,
        rate=(settings.SIGN_IN_LOCK_FAILURES, settings.SIGN_IN_LOCK_WINDOW_SECONDS),
        increment=True,
    )
    if usage is not None and usage["count"] >= settings.SIGN_IN_LOCK_FAILURES:
        lock_seconds = settings.SIGN_IN_LOCK_SECONDS
        caches[settings.RATELIMIT_USE_CACHE].set(
            _lock_key(scope, identifier), time.time() + lock_seconds, timeout=lock_seconds
        )


def sign_in_locked_message(seconds_left: int, *, name: str = "email") -> str:
    """The answer to a sign-in while locked: `name` is what the form asks for (email, username)."""
    minutes = max(1, math.ceil(seconds_left / 60))
    return SIGN_IN_LOCKED.format(name=name, wait="1 minute" if minutes == 1 else f"{minutes} minutes")
