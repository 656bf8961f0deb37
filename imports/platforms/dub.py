"""Dub: the API's lists saved as JSON, one file each: GET /partners (with each partner's links), /links, /customers
(?includeExpandedFields=true, for the customer's link and partner) and /commissions.

Dub's partner links are short links on Dub's domain or the owner's short domain (go.example.com/<key>), not a query
parameter on the site: the key becomes the partner's code here (?via=<key> works at once; the short domain keeps
answering only while it points at Dub). Amounts are cents: a commission's `amount` is the sale, `earnings` the
partner's commission. Status: pending and hold -> pending, processed -> approved (owed, in a payout not yet paid),
paid -> paid, refunded, duplicate, fraud and canceled -> void. A commission's sale keeps its invoiceId (the Stripe
invoice id with Dub's Stripe integration), so a Stripe refund of that invoice after the move reverses the commission."""

from typing import Any

from imports.platforms.base import (
    Files,
    Item,
    SourceBuilder,
    code_of,
    dig,
    email_of,
    first,
    items_with_where,
    json_items,
    looks_like_json,
    money,
    required,
    seq,
    text,
    time_or_epoch,
    unknown_file,
)
from imports.records import (
    CommissionRow,
    ImportFileError,
    LinkRow,
    PartnerRow,
    ReferralRow,
    RowRefused,
    Source,
    known_currency,
)

PLATFORM = "dub"
COMMISSION_STATUSES = {
    "pending": "pending",
    "hold": "pending",
    "processed": "approved",
    "paid": "paid",
    "refunded": "void",
    "duplicate": "void",
    "fraud": "void",
    "canceled": "void",
}
EXPECTED = "Dub's partners, links, customers or commissions JSON (GET /partners, /links, /customers, /commissions)"


def read(files: Files) -> Source:
    builder = SourceBuilder(PLATFORM)
    parsed: list[tuple[str, str, list[Item]]] = []
    for name, content in files:
        if not looks_like_json(content):
            raise ImportFileError(f"{name}: Dub files are the API's JSON answers; expected {EXPECTED}")
        items = json_items(name, content)
        parsed.append((name, _kind(name, items), items))
    # A customer listed without its partner names its link: the link's partner referred it.
    link_partner: dict[str, str] = {}
    for _, kind, items in parsed:
        for item in items:
            if kind == "links" and text(item.get("partnerId")):
                link_partner[text(item.get("id"))] = text(item.get("partnerId"))
            if kind == "partners":
                for link in seq(item.get("links")):
                    if isinstance(link, dict) and text(link.get("id")):
                        link_partner[text(link.get("id"))] = text(item.get("id"))
    for name, kind, items in parsed:
        if kind == "partners":
            builder.saw_partner_file = True
        for where, item in items_with_where(name, items):
            if kind == "partners":
                builder.attempt(where, "partner", _partner, where, item, partner_id=text(item.get("id")))
                for link in seq(item.get("links")):
                    builder.attempt(where, "link", _link, where, link, text(item.get("id")))
            elif kind == "links":
                builder.attempt(where, "link", _link, where, item, text(item.get("partnerId")))
            elif kind == "customers":
                builder.attempt(where, "referral", _customer, where, item, link_partner)
            elif kind == "commissions":
                builder.attempt(where, "commission", _commission, where, item)
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    if "earnings" in sample:
        return "commissions"
    if "externalId" in sample or "stripeCustomerId" in sample:
        return "customers"
    if "key" in sample and "domain" in sample:
        return "links"
    if "email" in sample and ("links" in sample or "paypalEmail" in sample or "status" in sample):
        return "partners"
    raise unknown_file(name, EXPECTED)


def _partner(where: str, item: Item) -> PartnerRow:
    paypal = email_of(item.get("paypalEmail"), required=False)
    return PartnerRow(
        where=where,
        source_id=required(item.get("id"), "partner id"),
        email=email_of(item.get("email"), required=True),
        name=first(item.get("name"), item.get("companyName")),
        payout_email=paypal,
        payout_rail="paypal" if paypal else "",
        created_at=time_or_epoch(first(item.get("createdAt"), item.get("enrolledAt"))),
    )


def _link(where: str, link: Any, partner_id: str) -> LinkRow | None:
    if not isinstance(link, dict):
        raise RowRefused("a link is not an object")
    if not partner_id:
        return None  # a link of no partner (the workspace's own short links) is not a referral link
    code = code_of(link.get("key"))
    return LinkRow(where=where, source_id=first(link.get("id"), code), partner_source_id=partner_id, code=code)


def _customer(where: str, item: Item, link_partner: dict[str, str]) -> ReferralRow:
    stripe_id = text(item.get("stripeCustomerId"))
    external = text(item.get("externalId"))
    email = email_of(item.get("email"), required=False)
    if not email and not external and not stripe_id:
        raise RowRefused("no customer: neither an email, an externalId nor a stripeCustomerId")
    link_id = first(dig(item, "link", "id"), item.get("linkId"))
    partner = first(dig(item, "partner", "id"), item.get("partnerId"), link_partner.get(link_id, ""))
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "customer id"),
        partner_source_id=required(partner, "partner"),
        email=email,
        customer_key=external,
        processor_customer_id=stripe_id,
        status="customer" if stripe_id or text(item.get("firstSaleAt")) or (item.get("sales") or 0) else "lead",
        link_code=first(dig(item, "link", "key")),
        created_at=time_or_epoch(item.get("createdAt")),
    )


def _commission(where: str, item: Item) -> CommissionRow:
    status = text(item.get("status")).lower()
    if status not in COMMISSION_STATUSES:
        raise RowRefused(f"status {status!r} is not one of {', '.join(COMMISSION_STATUSES)}")
    currency = known_currency(text(item.get("currency")))
    earnings = item.get("earnings")
    if earnings is None or text(earnings) == "":
        raise RowRefused("earnings are missing")
    return CommissionRow(
        where=where,
        source_id=required(item.get("id"), "commission id"),
        partner_source_id=required(first(dig(item, "partner", "id"), item.get("partnerId")), "partner"),
        referral_source_id=first(dig(item, "customer", "id"), item.get("customerId")),
        sale_source_id=first(item.get("invoiceId")),
        # invoiceId (nullable in Dub's CommissionSchema) is the Stripe invoice id with Dub's Stripe integration, or
        # the owner's invoice id given to Dub's track-sale call: a Stripe refund of that invoice finds the sale.
        processor_payment_id=first(item.get("invoiceId")),
        sale_amount_minor=money(first(item.get("amount"), 0), currency, given_in="minor"),
        commission_amount_minor=money(earnings, currency, given_in="minor"),
        currency=currency,
        status=COMMISSION_STATUSES[status],
        created_at=time_or_epoch(item.get("createdAt")),
    )
