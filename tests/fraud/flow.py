"""What the fraud rule tests send over HTTP (clicks, leads, sales, refunds with the program key) and what they
check after every scenario (the partner's ledger agrees with its commissions)."""

import json
from datetime import timedelta
from typing import Any

from django.db.models import Sum
from django.utils import timezone

from commissions.models import Commission, LedgerEntry
from programs.models import PartnerProgram
from tests.helpers import bearer
from tracking.rollups import clicks_not_on_counters, link_click_counts, rollup_read, with_clicks_not_counted
from tracking.selectors.performance import tracking_performance_get

CLICK_URL = "/api/v1/track/click"
LEAD_URL = "/api/v1/track/lead"
SALE_URL = "/api/v1/track/sale"
REFUND_URL = "/api/v1/track/refund"

CHROME_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
)
FIREFOX_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0"
GOOGLEBOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
VISITOR_IP = "203.0.113.7"
OTHER_IP = "198.51.100.9"


def click(
    client,
    link,
    *,
    ip: str = VISITOR_IP,
    user_agent: str = CHROME_UA,
    query: str = "",
    method: str = "POST",
    headers: dict[str, str] | None = None,
    **body: Any,
):
    """A click on the link, sent by the program's server with the visitor's IP and user agent."""
    payload = {
        "affiliate_url": f"https://shop.example.com/pricing?aff={link.short_link}{query}",
        "visitor_ip": ip,
        "user_agent": user_agent,
        **body,
    }
    extra = {**bearer(link.program.raw_api_key), **(headers or {})}
    if method == "HEAD":
        # A HEAD carries its body as any request does; the test client's head() would move it to the query.
        return client.generic("HEAD", CLICK_URL, json.dumps(payload), content_type="application/json", **extra)
    return client.post(CLICK_URL, payload, format="json", **extra)


def click_id_of(response) -> str:
    assert response.status_code == 200, response.content
    return response.json()["click_id"]


def lead(client, program, *, click_id: str, customer_key: str, email: str = ""):
    body = {"click_id": click_id, "customer_key": customer_key, **({"email": email} if email else {})}
    return client.post(LEAD_URL, body, format="json", **bearer(program.raw_api_key))


def sale(client, program, *, transaction_id: str = "txn_1", amount_cents: int = 10000, **ids: str):
    body = {"transaction_id": transaction_id, "amount_cents": amount_cents, **ids}
    return client.post(SALE_URL, body, format="json", **bearer(program.raw_api_key))


def refund(client, program, *, transaction_id: str, **body: Any):
    return client.post(
        REFUND_URL, {"transaction_id": transaction_id, **body}, format="json", **bearer(program.raw_api_key)
    )


def commission_of(response) -> Commission:
    assert response.status_code == 200, response.content
    return Commission.objects.get(pk=response.json()["commission_id"])


def link_clicks(link) -> int:
    """The link's clicks as every page reads them (its counter plus the clicks not on it yet)."""
    return link_click_counts([link.pk])[link.pk].clicks


def partner_clicks(link) -> int:
    counter = PartnerProgram.objects.get(partner=link.partner, program=link.program).clicks
    more = rollup_read(lambda marks: clicks_not_on_counters(marks, program_id=link.program_id))
    return with_clicks_not_counted(counter, None, [row for row in more if row["partner_id"] == link.partner_id]).clicks


def dashboard_clicks(program) -> int:
    today = timezone.now().date()
    performance = tracking_performance_get(program=program, date_from=today - timedelta(days=2), date_to=today)
    return performance["totals"]["clicks"]


def assert_ledger_consistent(partner) -> None:
    """The partner's ledger is its credited commissions less what was taken back of them: every entry tied to a
    commission sums to what those commissions still pay, and review entries move nothing."""
    entries = LedgerEntry.objects.filter(partner=partner)
    total = entries.aggregate(total=Sum("amount_cents"))["total"] or 0
    credited = Commission.objects.filter(partner=partner, credited=True)
    expected = sum(commission.amount_cents - commission.deducted_cents for commission in credited)
    assert total == expected
    assert all(entry.amount_cents == 0 for entry in entries.filter(kind=LedgerEntry.Kind.REVIEW))
    uncredited = Commission.objects.filter(partner=partner, credited=False)
    moved = entries.filter(commission__in=uncredited).exclude(kind=LedgerEntry.Kind.REVIEW)
    assert not moved.exists(), "an uncredited commission moved money"


def referred_sale(client, link, *, email: str, key: str = "user_1", transaction_id: str = "txn_1", **click_fields):
    """A visitor's click on the link, their signup with `email` and their first sale: the sale's answer."""
    click_id = click_id_of(click(client, link, **click_fields))
    signed_up = lead(client, link.program, click_id=click_id, customer_key=key, email=email)
    assert signed_up.status_code == 200, signed_up.content
    return sale(client, link.program, customer_key=key, transaction_id=transaction_id)


def reviews_of(commission: Commission) -> list[tuple[str, str, str]]:
    """The commission's decision log: (action, rule, actor) oldest first."""
    return list(commission.reviews.order_by("pk").values_list("action", "rule", "actor"))


def money_of(commission: Commission) -> list[tuple[str, int]]:
    """The commission's ledger entries: (kind, amount) oldest first."""
    return list(LedgerEntry.objects.filter(commission=commission).order_by("pk").values_list("kind", "amount_cents"))
