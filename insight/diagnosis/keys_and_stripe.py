"""Mistakes about keys, the browser tracker, attribution without leads and Stripe."""

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet

from programs.models import ApiCall, Program, ProgramKey
from tracking.models import LeadEvent, ProcessorEvent, SaleEvent

from . import FAIL, WARN, Mistake, detector

# The tracking routes a backend calls with its key.
KEYED_TRACKING_ROUTES = ("track-click", "track-lead", "track-sale", "track-refund")
# Test-key calls that look like real traffic rather than an integrator trying things out.
TEST_TRAFFIC_MIN_CALLS = 10
# Beside the live key, test-key calls look like production when, among their newest TEST_TRAFFIC_SCAN, some came
# from the program's site or from other sites, or they named this many distinct customer keys.
TEST_TRAFFIC_SCAN = 500
TEST_CUSTOMERS_MIN = 5
# Stripe events without a program read to find the ones naming this program (bounded: the diagnosis is a hint).
UNCONNECTED_EVENTS_SCAN = 500
# The sale detectors examine at most this many of the window's newest live sales, through the (program, is_test,
# -sale_date, -id) index: a program taking many sales a day costs the same as a small one.
SALES_SCAN = 5_000


def _newest_live_sales(program: Program, since: datetime, now: datetime) -> QuerySet[SaleEvent]:
    """The window's newest SALES_SCAN live sales (all of them in a quieter window), as a time range the index
    reads directly: one index-only query finds the oldest time among them."""
    window = SaleEvent.objects.filter(program=program, is_test=False, sale_date__gte=since, sale_date__lte=now)
    oldest = window.order_by("-sale_date", "-id").values_list("sale_date", flat=True)[SALES_SCAN - 1 : SALES_SCAN]
    start = next(iter(oldest), since)
    return window.filter(sale_date__gte=start)


def _host(url: str) -> str:
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def _on_domain(host: str, domain: str) -> bool:
    domain = _host(domain)
    return bool(host) and bool(domain) and (host == domain or host.endswith(f".{domain}"))


def _production_signs(program: Program, excerpts: list[dict[str, Any]]) -> list[str]:
    """What in test-key calls looks like production rather than a developer trying things out: pages on the
    program's own site, visitors referred by other sites, many distinct customer keys."""
    domain = _host(program.domain)
    on_site = 0
    referrers: dict[str, int] = {}
    customers: set[str] = set()
    for excerpt in excerpts:
        # The page the tracker ran on (not the landing URL: a developer's curl names the real site too).
        if _host(str(excerpt.get("page_url") or "")) == domain:
            on_site += 1
        referrer = _host(str(excerpt.get("referrer_url") or ""))
        if _public_host(referrer) and not _on_domain(referrer, domain):
            referrers[referrer] = referrers.get(referrer, 0) + 1
        if excerpt.get("customer_key"):
            customers.add(str(excerpt["customer_key"]))
    signs = []
    if on_site:
        signs.append(f"{on_site} on {domain}")
    if referrers:
        named = sorted(referrers, key=lambda host: -referrers[host])[:3]
        signs.append(f"{sum(referrers.values())} referred by other sites ({', '.join(named)})")
    if len(customers) >= TEST_CUSTOMERS_MIN:
        signs.append(f"{len(customers)} distinct customer keys")
    return signs


def _public_host(host: str) -> bool:
    """A host a real visitor's referrer could name: not localhost, not an IP address, not a single label."""
    if not host or host == "localhost" or host.endswith((".localhost", ".local", ".test", ".internal")):
        return False
    return "." in host and not host.replace(".", "").isdigit() and ":" not in host


@detector
def test_key_on_live_traffic(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """Accepted tracking calls made with the test key (test events: no commission, never counted) that look like
    real traffic. Without a live-key call in the window, TEST_TRAFFIC_MIN_CALLS of them are enough (a program still
    being integrated looks the same at first, hence the minimum) unless live sales came another way (Stripe). With
    the live key in use too, testing beside production is ordinary, so the test calls are named only when they
    also look like production (_production_signs, among the newest TEST_TRAFFIC_SCAN)."""
    calls = ApiCall.objects.filter(
        program=program, created_at__gte=since, created_at__lte=now, route__in=KEYED_TRACKING_ROUTES, status__lt=400
    )
    test_calls = Q(key_mode=ProgramKey.Mode.TEST)
    seen = calls.aggregate(
        test=Count("id", filter=test_calls),
        live=Count("id", filter=Q(key_mode=ProgramKey.Mode.LIVE)),
        last=Max("created_at", filter=test_calls),
    )
    if seen["test"] < TEST_TRAFFIC_MIN_CALLS:
        return None
    if not seen["live"]:
        if SaleEvent.objects.filter(program=program, is_test=False, sale_date__gte=since).exists():
            return None
        return Mistake(
            code="test_key_on_live_traffic",
            title=f"{seen['test']} tracking calls used the test key and none the live key: test events only",
            count=seen["test"],
            last_seen_at=seen["last"],
            fix="Use the live key (aff_…, not aff_test_…) in production; test events earn no commission.",
            severity=FAIL,
        )
    excerpts = list(
        calls.filter(test_calls).order_by("-created_at").values_list("excerpt", flat=True)[:TEST_TRAFFIC_SCAN]
    )
    signs = _production_signs(program, [excerpt for excerpt in excerpts if isinstance(excerpt, dict)])
    if not signs:
        return None
    return Mistake(
        code="test_key_on_live_traffic",
        title=f"{seen['test']} tracking calls used the test key beside the live key's {seen['live']}, and look like "
        f"production: {'; '.join(signs)}",
        count=seen["test"],
        last_seen_at=seen["last"],
        fix="Use the live key (aff_…, not aff_test_…) wherever real visitors and payments are tracked "
        f"({program.domain} and the backend serving it); keep the test key for local and staging setups. Test "
        "events earn no commission and are never counted.",
    )


@detector
def retired_key_used(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """Calls refused because they sent a key that regeneration replaced: authentication recognises the old key
    by its digest (programs.RetiredProgramKey) and notes it on the call's log row."""
    calls = ApiCall.objects.filter(
        program=program, created_at__gte=since, created_at__lte=now, excerpt__retired_key=True
    )
    seen = calls.aggregate(count=Count("id"), last=Max("created_at"))
    if not seen["count"]:
        return None
    latest = calls.order_by("-created_at").values_list("excerpt", flat=True).first() or {}
    replaced_on = latest.get("replaced_on") or "an earlier date"
    return Mistake(
        code="retired_key_used",
        title=f"This key was replaced on {replaced_on}; {seen['count']} calls still use it",
        count=seen["count"],
        last_seen_at=seen["last"],
        fix="Update the key in your backend's configuration to the program's current key.",
        severity=FAIL,
    )


@detector
def tracker_misconfigured(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """The browser tracker without `data-svc-program-id`, or on another domain than the program's; both are named
    when both happen (one fixed must not reveal the other only then).

    The request log keeps no Origin or Referer, so a refused track/visit (no or unknown program_id) is matched to
    the program by its page_url host against the program's domain; a refused track/config carries no page_url and
    cannot be matched. Visits the program accepted whose page_url host is not its domain show the tracker on
    another domain."""
    refused = ApiCall.objects.filter(
        program__isnull=True, route="track-visit", status__gte=400, created_at__gte=since, created_at__lte=now
    ).values_list("excerpt", "created_at")[:UNCONNECTED_EVENTS_SCAN]
    missing = [at for excerpt, at in refused if _on_domain(_host(str(excerpt.get("page_url") or "")), program.domain)]
    visits = ApiCall.objects.filter(
        program=program, route="track-visit", status__lt=400, created_at__gte=since, created_at__lte=now
    ).values_list("excerpt", "created_at")[:UNCONNECTED_EVENTS_SCAN]
    elsewhere: dict[str, list[datetime]] = {}
    for excerpt, at in visits:
        host = _host(str(excerpt.get("page_url") or ""))
        if host and not _on_domain(host, program.domain):
            elsewhere.setdefault(host, []).append(at)
    titles, fixes, times = [], [], list(missing)
    if missing:
        titles.append(f"The tracker on {_host(program.domain)} sent {len(missing)} visits without a valid program id")
        fixes.append(f'Add data-svc-program-id="{program.pk}" to the tracker\'s script tag.')
    if elsewhere:
        hosts = sorted(elsewhere, key=lambda h: len(elsewhere[h]), reverse=True)
        titles.append(
            f"The tracker runs on another domain ({', '.join(hosts[:3])}) than the program's ({program.domain})"
        )
        fixes.append(f"Install the tracker on {program.domain}, or set the program's domain to the site it runs on.")
        times.extend(at for at_times in elsewhere.values() for at in at_times)
    if not titles:
        return None
    return Mistake(
        code="tracker_misconfigured",
        # The second problem, when there are two, is named in lower case after the first.
        title="; ".join([titles[0], *(title[0].lower() + title[1:] for title in titles[1:])]),
        count=len(times),
        last_seen_at=max(times),
        fix=" ".join(fixes),
        # Visits refused for their program id are lost; visits from another domain were recorded.
        severity=FAIL if missing else WARN,
    )


@detector
def sales_without_leads(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """Live sales attributed by their click_id alone, for customers no lead was ever sent for: attribution held,
    but the signup (and any lead commission or customer_key for later sales) was never recorded."""
    sales = (
        _newest_live_sales(program, since, now)
        .filter(attributed_by="click_id", customer__isnull=False)
        .filter(~Exists(LeadEvent.objects.filter(customer=OuterRef("customer_id"))))
    )
    seen = sales.aggregate(count=Count("id"), last=Max("sale_date"))
    if not seen["count"]:
        return None
    return Mistake(
        code="sales_without_leads",
        title=f"{seen['count']} sales were attributed by click_id only: no lead was ever sent for their customers",
        count=seen["count"],
        last_seen_at=seen["last"],
        fix="Send the lead at signup (POST /api/v1/track/lead with the click_id and your customer_key).",
    )


def _metadata_of(payload: Any) -> dict[str, Any]:
    obj = ((payload or {}).get("data") or {}).get("object") or {}
    parent = (obj.get("parent") or {}).get("subscription_details") or {}
    details = parent or obj.get("subscription_details") or {}
    for metadata in (obj.get("metadata"), details.get("metadata")):
        if isinstance(metadata, dict) and metadata:
            return metadata
    return {}


@detector
def stripe_unattributed(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """Stripe payments the program cannot attribute, most telling first:
    - events arriving for no connected program whose metadata names this program (its connection is missing;
      events without such metadata cannot be told apart from another platform's);
    - live subscription payments recorded unattributed with no subscription_data.metadata;
    - live payments recorded unattributed (no attribution metadata, nor an email or customer matching a lead)."""
    if not program.stripe_account_id:
        unconnected = ProcessorEvent.objects.filter(
            program__isnull=True, received_at__gte=since, received_at__lte=now
        ).values_list("payload", "received_at")[:UNCONNECTED_EVENTS_SCAN]
        arrived = [
            at for payload, at in unconnected if str(_metadata_of(payload).get("program_id") or "") == str(program.pk)
        ]
        if arrived:
            return Mistake(
                code="stripe_unattributed",
                title=f"{len(arrived)} Stripe events arrived for this program but its Stripe connection is missing",
                count=len(arrived),
                last_seen_at=max(arrived),
                fix="Connect the program's Stripe account (the one that takes these payments).",
                severity=FAIL,
            )
    unattributed = _newest_live_sales(program, since, now).filter(provider="stripe", attributed=False)
    seen = unattributed.aggregate(
        count=Count("id"),
        last=Max("sale_date"),
        subscriptions=Count("id", filter=Q(sale_type="subscription")),
    )
    if not seen["count"]:
        return None
    if seen["subscriptions"]:
        title = (
            f"{seen['count']} Stripe payments were recorded unattributed, {seen['subscriptions']} of them "
            "subscriptions without subscription_data.metadata"
        )
        fix = (
            "Pass svc_click_id (and svc_customer_key) in the Checkout Session's metadata and, for subscriptions, "
            "in subscription_data.metadata so every invoice carries it."
        )
    else:
        title = f"{seen['count']} Stripe payments were recorded unattributed: no attribution metadata"
        fix = "Pass svc_click_id (and svc_customer_key) in the Checkout Session's or Payment Intent's metadata."
    return Mistake(
        code="stripe_unattributed",
        title=title,
        count=seen["count"],
        last_seen_at=seen["last"],
        fix=fix,
    )
