"""The spec's Limits table, enforced with django-ratelimit before a view does any work."""

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django_ratelimit import core as django_ratelimit_core
from django_ratelimit.core import EXPIRATION_FUDGE, _make_cache_key, get_usage

from core import messages
from core.api.auth import bearer_token
from core.clientip import client_ip
from core.errors import RateLimitedError

PER_IP = "ip"
PER_KEY = "key"  # the Bearer credential (program key or login token); IP when none is sent
PER_SESSION = "session"  # the dashboard sign-in; IP when signed out


@dataclass(frozen=True)
class RateScope:
    group: str
    per_minute: int
    counted_per: str


TRACK_CLICK = RateScope("track-click", 60, PER_IP)
TRACK_VISIT = RateScope("track-visit", 120, PER_IP)
TRACK_CONFIG = RateScope("track-config", 60, PER_IP)
# The tracker's svc.getDiscount() (an extension): asked by pages that show the discount, not on every load.
TRACK_DISCOUNT = RateScope("track-discount", 60, PER_IP)
TRACK_LEAD = RateScope("track-lead", 30, PER_IP)
# Sale and refund share one bucket per key.
TRACK_MONEY = RateScope("track-sale-refund", 120, PER_KEY)
READINESS = RateScope("readiness", 30, PER_KEY)
ANALYTICS_SOURCES = RateScope("analytics-sources", 30, PER_KEY)
PROGRAM_SETTINGS = RateScope("program-settings", 30, PER_SESSION)
CLI = RateScope("cli", 60, PER_KEY)
# `svc listen` polls about once a second: its own bucket, so listening neither trips at 60 polls a minute nor
# starves the other CLI calls (svc trigger) of the same login.
CLI_LISTEN = RateScope("cli-listen", 120, PER_KEY)
# Every agent route shares one bucket per agent key.
AGENT = RateScope("agent", 120, PER_KEY)


def _bucket(scope: RateScope, request: HttpRequest) -> str:
    if scope.counted_per == PER_KEY:
        token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if token:
            # Hash so the cache never holds a usable key.
            return "key:" + hashlib.sha256(token.encode()).hexdigest()
    elif scope.counted_per == PER_SESSION:
        session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
        if session_key:
            return "session:" + hashlib.sha256(session_key.encode()).hexdigest()
    return "ip:" + client_ip(request)


# The headers every answer of a rate-limited route carries: the one place they are named (the schema documents
# them, CORS exposes them, RateUsage.headers sets them).
LIMIT_HEADER = "X-RateLimit-Limit"
REMAINING_HEADER = "X-RateLimit-Remaining"
RESET_HEADER = "X-RateLimit-Reset"
HEADER_NAMES: tuple[str, ...] = (LIMIT_HEADER, REMAINING_HEADER, RESET_HEADER)


@dataclass(frozen=True)
class RateUsage:
    limit: int
    remaining: int
    reset_at: int

    def headers(self) -> dict[str, str]:
        return {
            LIMIT_HEADER: str(self.limit),
            REMAINING_HEADER: str(self.remaining),
            RESET_HEADER: str(self.reset_at),
        }


PERIOD_SECONDS = 60


def _usage(scope: RateScope, request: HttpRequest, *, increment: bool) -> tuple[int, dict[str, Any] | None]:
    limit = max(1, math.ceil(scope.per_minute * settings.RATELIMIT_SCALE))
    bucket = _bucket(scope, request)
    cache = caches[settings.RATELIMIT_USE_CACHE]
    count_one = getattr(cache, "count_one", None)
    if increment and count_one is not None and settings.RATELIMIT_ENABLE:
        # Our counter caches count in one operation (core.counter_cache); the bucket's window and cache key are
        # django-ratelimit's own, so rate_limit_peek (get_usage) reads the same count.
        # Looked up on the module at each call, as get_usage does, so both ways of counting share one window rule.
        window = django_ratelimit_core._get_window(bucket, PERIOD_SECONDS)
        key = _make_cache_key(scope.group, window, (limit, PERIOD_SECONDS), bucket, get_usage.ALL)
        count = count_one(key, PERIOD_SECONDS + EXPIRATION_FUDGE)
        return limit, {
            "count": count,
            "limit": limit,
            "should_limit": count > limit,
            "time_left": window - int(time.time()),
        }
    usage = get_usage(
        request,
        group=scope.group,
        key=lambda _group, _request: bucket,
        rate=(limit, PERIOD_SECONDS),
        increment=increment,
    )
    return limit, usage


def rate_limit_peek(scope: RateScope, request: HttpRequest) -> RateUsage | None:
    """The bucket's usage without counting this request: the rate-limit headers of a request refused before
    it reached the route (wrong method, over a size limit), which is not a call of the route."""
    limit, usage = _usage(scope, request, increment=False)
    if usage is None:  # RATELIMIT_ENABLE is off
        return None
    reset_at = int(time.time()) + int(usage["time_left"])
    return RateUsage(limit=limit, remaining=max(0, limit - usage["count"]), reset_at=reset_at)


def rate_limit_check(scope: RateScope, request: HttpRequest) -> RateUsage | None:
    """Counts this request. Returns the usage for the rate-limit headers, or raises the typed
    429 when the bucket is full; the caller sends it before any work, so nothing is recorded."""
    limit, usage = _usage(scope, request, increment=True)
    if usage is None:  # RATELIMIT_ENABLE is off
        return None
    reset_at = int(time.time()) + int(usage["time_left"])
    result = RateUsage(limit=limit, remaining=max(0, limit - usage["count"]), reset_at=reset_at)
    if usage["should_limit"]:
        retry_after = max(1, int(usage["time_left"]))
        raise RateLimitedError.retry_after(
            messages.RATE_LIMITED.format(seconds=retry_after), seconds=retry_after, headers=result.headers()
        )
    return result
