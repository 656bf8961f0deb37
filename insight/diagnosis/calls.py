"""Mistakes read from the request log (programs.ApiCall): what the program's integration sent and how it was
answered. Each detector spends one or two aggregate queries over the window."""

from datetime import datetime, timedelta

from django.db.models import Count, Max, Min, Q, QuerySet

from core import messages
from core.currency import Currency
from programs.models import ApiCall, Program

from . import FAIL, WARN, Mistake, detector

SALE, LEAD, CLICK = "track-sale", "track-lead", "track-click"
# The click refusals that mean "this URL names no partner of the program".
CLICK_CODE_REFUSALS = (messages.NO_AFF_PARAMETER, messages.REFERRAL_LINK_NOT_FOUND)
# The same transaction_id refused this many times within RETRY_SPAN looks like a client retrying a 409.
RETRY_REPEATS = 3
RETRY_SPAN = timedelta(minutes=10)
NAMES_SHOWN = 5


def _calls(program: Program, since: datetime, route: str) -> QuerySet[ApiCall]:
    return ApiCall.objects.filter(program=program, created_at__gte=since, route=route)


def _named(values: list[str]) -> str:
    shown = ", ".join(values[:NAMES_SHOWN])
    return shown + (f" and {len(values) - NAMES_SHOWN} more" if len(values) > NAMES_SHOWN else "")


@detector
def sale_customer_key_without_lead(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """#1: the sale named a customer_key the service never saw at lead time, so the spec's answer ("Provide
    customer_key or click_id") reads as if none was sent."""
    found = (
        _calls(program, since, SALE)
        .filter(status=400, message=messages.SALE_CUSTOMER_NOT_FOUND, excerpt__has_key="customer_key")
        .exclude(Q(excerpt__customer_key="") | Q(excerpt__customer_key=None))
        .aggregate(count=Count("pk"), last=Max("created_at"))
    )
    if not found["count"]:
        return None
    return Mistake(
        code="sale_customer_key_without_lead",
        title="Sales refused: their customer_key never came with a lead",
        count=found["count"],
        last_seen_at=found["last"],
        fix="Send the lead first: on signup call POST /api/v1/track/lead with the click_id (svc_click_id cookie) "
        "and your user id as customer_key, then send that same customer_key with each sale.",
        severity=FAIL,
    )


@detector
def lead_without_click_id(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """#2: leads naming a customer_key but no click_id, accepted or refused: without the click id the lead
    cannot be tied to the click that brought the visitor."""
    found = (
        _calls(program, since, LEAD)
        .filter(excerpt__has_key="customer_key")
        .exclude(Q(excerpt__customer_key="") | Q(excerpt__customer_key=None))
        .filter(Q(excerpt__click_id="") | Q(excerpt__click_id=None) | ~Q(excerpt__has_key="click_id"))
        .aggregate(count=Count("pk"), refused=Count("pk", filter=Q(status__gte=400)), last=Max("created_at"))
    )
    if not found["count"]:
        return None
    return Mistake(
        code="lead_without_click_id",
        title=f"Leads sent with customer_key but no click_id ({found['refused']} refused)",
        count=found["count"],
        last_seen_at=found["last"],
        fix="Send the click id the tracker stored (the svc_click_id cookie) as click_id with each lead, "
        "together with your user id as customer_key.",
        severity=FAIL if found["refused"] else WARN,
    )


@detector
def unsupported_currency(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """#4: sales refused for their currency, with the currencies that were sent."""
    rows = list(
        _calls(program, since, SALE)
        .filter(error_code="unsupported_currency")
        .values("excerpt__currency")
        .annotate(count=Count("pk"), last=Max("created_at"))
        .order_by("-count")
    )
    if not rows:
        return None
    sent = [str(row["excerpt__currency"]) for row in rows if row["excerpt__currency"] is not None]
    return Mistake(
        code="unsupported_currency",
        title=f"Sales refused for an unsupported currency ({_named(sent) or 'unknown'})",
        count=sum(row["count"] for row in rows),
        last_seen_at=max(row["last"] for row in rows),
        fix=f"Send currency as one of {', '.join(Currency.values)} (or leave it out for USD); convert other "
        "currencies before calling POST /api/v1/track/sale.",
        severity=FAIL,
    )


@detector
def click_without_known_code(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """#5: clicks refused because the URL has no ?aff=/?via= or names no link. A click from the browser
    tracker carries no key, so its row names the program only in the body's program_id."""
    mine = Q(program=program) | Q(program__isnull=True, excerpt__program_id=program.pk)
    mine |= Q(program__isnull=True, excerpt__program_id=str(program.pk))
    found = list(
        ApiCall.objects.filter(mine, created_at__gte=since, route=CLICK, status=400, message__in=CLICK_CODE_REFUSALS)
        .values("message")
        .annotate(count=Count("pk"), last=Max("created_at"))
    )
    counts = {row["message"]: row["count"] for row in found}
    lasts = [row["last"] for row in found]
    if not counts:
        return None
    missing = counts.get(messages.NO_AFF_PARAMETER, 0)
    unknown = counts.get(messages.REFERRAL_LINK_NOT_FOUND, 0)
    fixes = []
    if missing:
        fixes.append("Referral links must carry the partner's code as ?aff=<code> (or ?via=<code>).")
    if unknown:
        fixes.append(
            "Use the codes of the program's active referral links (dashboard → Referral links); an unknown or "
            "mistyped code is refused, and a tracker on another program's page sends the wrong program_id."
        )
    return Mistake(
        code="click_without_known_code",
        title=f"Clicks refused: {missing} without ?aff=/?via=, {unknown} with an unknown code",
        count=missing + unknown,
        last_seen_at=max(lasts),
        fix=" ".join(fixes),
    )


@detector
def duplicate_transaction(program: Program, since: datetime, now: datetime) -> Mistake | None:
    """#6: sales answered 409. The same transaction_id sent RETRY_REPEATS times or more within RETRY_SPAN looks
    like a retry loop; otherwise distinct sales are reusing ids."""
    rows = list(
        _calls(program, since, SALE)
        .filter(status=409, error_code="duplicate_transaction")
        .values("excerpt__transaction_id")
        .annotate(count=Count("pk"), first=Min("created_at"), last=Max("created_at"))
    )
    if not rows:
        return None
    looping = [
        str(row["excerpt__transaction_id"])
        for row in rows
        if row["count"] >= RETRY_REPEATS and row["last"] - row["first"] <= RETRY_SPAN
    ]
    count = sum(row["count"] for row in rows)
    if looping:
        title = f"Sales refused as duplicates: a retry loop resends {_named(looping)}"
        fix = (
            "A 409 duplicate_transaction is final: the sale was recorded the first time (details.sale_id). "
            "Stop retrying on 409 and retry only on 5xx or network errors."
        )
    else:
        title = f"Sales refused as duplicates: {len(rows)} transaction_id(s) reused"
        fix = (
            "Send a transaction_id unique to each payment (your order or payment id), not a customer or "
            "product id; a 409 means that id was already recorded."
        )
    return Mistake(
        code="duplicate_transaction",
        title=title,
        count=count,
        last_seen_at=max(row["last"] for row in rows),
        fix=fix,
    )
