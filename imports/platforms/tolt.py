"""Tolt: the API's lists saved as JSON, one file each: GET /v1/partners?expand[]=program, /v1/links?expand[]=partner,
/v1/customers?expand[]=partner and /v1/commissions?expand[]=partner&expand[]=program (the {"data": [...]} answer or
its list).

Links in the wild are ?<param>=<value>, the param "ref" unless the program changed it. Money fields are cents, often
sent as strings ("1999"). A commission carries no currency of its own: it is the program's currency_code (from the
commission's program, else the partners' program). Status: pending -> pending, approved -> approved, paid -> paid,
rejected and refunded -> void."""

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
    name_of,
    required,
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

PLATFORM = "tolt"
COMMISSION_STATUSES = {
    "pending": "pending",
    "approved": "approved",
    "paid": "paid",
    "rejected": "void",
    "refunded": "void",
}
# Tolt's customer statuses: a paying ("active") customer, or one who paid and left, is a customer; else a lead.
CUSTOMER_STATUSES = {"active", "customer", "paying", "cancelled", "canceled", "churned", "refunded"}
EXPECTED = (
    "Tolt's partners, links, customers or commissions JSON "
    "(GET /v1/partners, /v1/links, /v1/customers, /v1/commissions)"
)


def read(files: Files) -> Source:
    builder = SourceBuilder(PLATFORM)
    parsed: list[tuple[str, str, list[Item]]] = []
    for name, content in files:
        if not looks_like_json(content):
            raise ImportFileError(f"{name}: Tolt files are the API's JSON answers; expected {EXPECTED}")
        items = json_items(name, content)
        parsed.append((name, _kind(name, items), items))
    # The program's currency, for commissions that do not carry their program.
    program_currency = next(
        (
            first(dig(item, "program", "currency_code"))
            for _, kind, items in parsed
            for item in items
            if first(dig(item, "program", "currency_code"))
        ),
        "",
    )
    # A commission listed without expand[]=partner names its customer only: the customer's partner earned it.
    customer_partner = {
        text(item.get("id")): _partner_id(item) for _, kind, items in parsed if kind == "customers" for item in items
    }
    for name, kind, items in parsed:
        if kind == "partners":
            builder.saw_partner_file = True
        for where, item in items_with_where(name, items):
            if kind == "partners":
                builder.attempt(where, "partner", _partner, where, item, partner_id=text(item.get("id")))
            elif kind == "links":
                builder.attempt(where, "link", _link, where, item)
            elif kind == "customers":
                builder.attempt(where, "referral", _customer, where, item)
            elif kind == "commissions":
                builder.attempt(where, "commission", _commission, where, item, program_currency, customer_partner)
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    identifier = text(sample.get("id"))
    if "revenue" in sample or identifier.startswith("comm_") or "charge_id" in sample:
        return "commissions"
    if "param" in sample and "value" in sample or identifier.startswith("lnk_"):
        return "links"
    if "customer_id" in sample or identifier.startswith("cust_") or identifier.startswith("cus_"):
        return "customers"
    if "email" in sample and ("first_name" in sample or identifier.startswith("part_")):
        return "partners"
    raise unknown_file(name, EXPECTED)


def _partner_id(item: Item) -> str:
    return first(dig(item, "partner", "id"), item.get("partner_id"))


def _partner(where: str, item: Item) -> PartnerRow:
    paypal = email_of(item.get("paypal_email"), required=False)
    return PartnerRow(
        where=where,
        source_id=required(item.get("id"), "partner id"),
        email=email_of(item.get("email"), required=True),
        name=name_of(item.get("first_name"), item.get("last_name")) or text(item.get("company_name")),
        payout_email=paypal,
        payout_rail="paypal" if paypal else "",
        created_at=time_or_epoch(item.get("created_at")),
    )


def _link(where: str, item: Item) -> LinkRow:
    code = code_of(item.get("value"))
    return LinkRow(
        where=where,
        source_id=first(item.get("id"), code),
        partner_source_id=required(_partner_id(item), "partner"),
        code=code,
    )


def _customer(where: str, item: Item) -> ReferralRow:
    own_id = text(item.get("customer_id"))
    email = email_of(item.get("email"), required=False)
    if not email and not own_id:
        raise RowRefused("no customer: neither an email nor a customer_id")
    status = text(item.get("status")).lower()
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "customer id"),
        partner_source_id=required(_partner_id(item), "partner"),
        email=email,
        # Tolt's customer_id is the owner's id for the customer, a Stripe customer id when billing is Stripe.
        customer_key="" if own_id.startswith("cus_") else own_id,
        processor_customer_id=own_id if own_id.startswith("cus_") else "",
        status="customer" if status in CUSTOMER_STATUSES else "lead",
        link_code=first(dig(item, "link", "value")),
        created_at=time_or_epoch(item.get("created_at")),
    )


def _commission(where: str, item: Item, program_currency: str, customer_partner: dict[str, str]) -> CommissionRow:
    status = text(item.get("status")).lower()
    if status not in COMMISSION_STATUSES:
        raise RowRefused(f"status {status!r} is not pending, approved, paid, rejected or refunded")
    currency = known_currency(first(item.get("currency"), dig(item, "program", "currency_code"), program_currency))
    amount = item.get("amount")
    if amount is None or text(amount) == "":
        raise RowRefused("amount is missing")
    customer = first(dig(item, "customer", "id"), item.get("customer_id"))
    return CommissionRow(
        where=where,
        source_id=required(item.get("id"), "commission id"),
        partner_source_id=required(_partner_id(item) or customer_partner.get(customer, ""), "partner"),
        referral_source_id=customer,
        sale_source_id=first(item.get("transaction_id"), item.get("charge_id")),
        sale_amount_minor=money(first(item.get("revenue"), 0), currency, given_in="minor"),
        commission_amount_minor=money(amount, currency, given_in="minor"),
        currency=currency,
        status=COMMISSION_STATUSES[status],
        created_at=time_or_epoch(item.get("created_at")),
        due_at=time_or_epoch(item.get("scheduled_approval_date")),
    )
