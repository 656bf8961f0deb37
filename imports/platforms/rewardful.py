"""Rewardful: the REST API's lists saved as JSON (GET /v1/affiliates?expand[]=links, /v1/referrals?expand[]=affiliate,
/v1/commissions?expand[]=sale; one file each, the {"data": [...]} answer or its list), and the affiliate CSV Rewardful
documents for moving affiliates (first_name, last_name, email, paypal_email, wise_email, token, stripe_customer_id).

Links in the wild are ?via=<token>. Amounts in the API are cents (minor units). Commission states: pending -> pending,
due -> approved (past its hold, owed), paid -> paid, voided -> void. A commission's sale keeps sale.stripe_charge_id
(the Stripe charge, in Rewardful's sale object), so a Stripe refund after the move reverses the imported commission."""

from typing import Any

from imports.platforms.base import (
    CsvFile,
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
    obj,
    read_csv,
    required,
    seq,
    text,
    time_or_epoch,
    unknown_file,
    where_csv,
)
from imports.records import (
    CommissionRow,
    LinkRow,
    PartnerRow,
    ReferralRow,
    RowRefused,
    Source,
    known_currency,
)

PLATFORM = "rewardful"
COMMISSION_STATES = {"pending": "pending", "due": "approved", "paid": "paid", "voided": "void"}
REFERRAL_STATES = {"visitor": "visitor", "lead": "lead", "conversion": "customer"}
EXPECTED = (
    "Rewardful's affiliates, referrals or commissions JSON (GET /v1/affiliates, /v1/referrals, /v1/commissions) "
    "or its affiliate CSV (first_name, last_name, email, token ...)"
)
# The documented CSV's columns, and the older spelling of the same template ("Affiliate Email", "Imported ID").
CSV_ALIASES = {
    "email": ("email", "affiliate_email"),
    "first_name": ("first_name", "affiliate_first_name"),
    "last_name": ("last_name", "affiliate_last_name"),
    "paypal_email": ("paypal_email", "affiliate_paypal_email"),
    "wise_email": ("wise_email", "affiliate_wise_email"),
    "token": ("token",),
    "stripe_customer_id": ("stripe_customer_id", "imported_id"),
}


def read(files: Files) -> Source:
    builder = SourceBuilder(PLATFORM)
    for name, content in files:
        if looks_like_json(content):
            _read_json(builder, name, json_items(name, content))
        else:
            _read_csv(builder, read_csv(name, content))
    return builder.finish()


def _json_kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    # A payout also has an amount and a state, and an affiliate a stripe_customer_id: look for what only each has.
    if "sale" in sample or "due_at" in sample and "state" in sample:
        return "commissions"
    if "conversion_state" in sample:
        return "referrals"
    if "email" in sample and ("links" in sample or "first_name" in sample):
        return "affiliates"
    if "stripe_customer_id" in sample and "customer" in sample:
        return "referrals"
    raise unknown_file(name, EXPECTED)


def _read_json(builder: SourceBuilder, name: str, items: list[Item]) -> None:
    kind = _json_kind(name, items)
    if kind == "affiliates":
        builder.saw_partner_file = True
    for where, item in items_with_where(name, items):
        if kind == "affiliates":
            builder.attempt(where, "partner", _affiliate, where, item, partner_id=text(item.get("id")))
            for link in seq(item.get("links")):
                builder.attempt(where, "link", _link, where, item, link)
        elif kind == "referrals":
            builder.attempt(where, "referral", _referral, where, item)
        elif kind == "commissions":
            builder.attempt(where, "commission", _commission, where, item)


def _payout(item: Item) -> tuple[str, str]:
    paypal = email_of(item.get("paypal_email"), required=False)
    if paypal:
        return paypal, "paypal"
    wise = email_of(item.get("wise_email"), required=False)
    return (wise, "wise") if wise else ("", "")


def _affiliate(where: str, item: Item) -> PartnerRow:
    source_id = required(item.get("id"), "affiliate id")
    payout_email, rail = _payout(item)
    return PartnerRow(
        where=where,
        source_id=source_id,
        email=email_of(item.get("email"), required=True),
        name=name_of(item.get("first_name"), item.get("last_name")),
        payout_email=payout_email,
        payout_rail=rail,
        created_at=time_or_epoch(item.get("created_at")),
    )


def _link(where: str, affiliate: Item, link: Any) -> LinkRow:
    if not isinstance(link, dict):
        raise RowRefused("a link is not an object")
    code = code_of(link.get("token"))
    return LinkRow(
        where=where,
        source_id=first(link.get("id"), code),
        partner_source_id=required(affiliate.get("id"), "affiliate id"),
        code=code,
    )


def _referral(where: str, item: Item) -> ReferralRow:
    state = text(item.get("conversion_state")).lower() or "lead"
    if state not in REFERRAL_STATES:
        raise RowRefused(f"conversion state {state!r} is not visitor, lead or conversion")
    customer = obj(item.get("customer"))
    stripe_id = first(item.get("stripe_customer_id"), dig(customer, "platform_id"))
    if not stripe_id and text(customer.get("id")).startswith("cus_"):
        stripe_id = text(customer.get("id"))
    email = email_of(customer.get("email"), required=False)
    if not email and not stripe_id:
        raise RowRefused("no customer: neither an email nor a Stripe customer id")
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "referral id"),
        partner_source_id=required(first(dig(item, "affiliate", "id"), item.get("affiliate_id")), "affiliate"),
        email=email,
        customer_key=text(customer.get("id")) if not text(customer.get("id")).startswith("cus_") else "",
        processor_customer_id=stripe_id,
        status=REFERRAL_STATES[state],
        link_code=first(dig(item, "link", "token")),
        created_at=time_or_epoch(first(item.get("became_lead_at"), item.get("created_at"))),
    )


def _commission(where: str, item: Item) -> CommissionRow:
    state = text(item.get("state")).lower()
    if state not in COMMISSION_STATES:
        raise RowRefused(f"state {state!r} is not pending, due, paid or voided")
    currency = known_currency(text(item.get("currency")))
    sale = obj(item.get("sale"))
    sale_minor = 0
    if sale:
        sale_currency = text(sale.get("currency")) or currency
        if known_currency(sale_currency) != currency:
            raise RowRefused(f"the sale is in {sale_currency.upper()} but the commission in {currency}")
        sale_minor = money(first(sale.get("sale_amount_cents"), 0), currency, given_in="minor")
    partner = first(
        dig(sale, "affiliate", "id"),
        dig(sale, "referral", "affiliate", "id"),
        dig(item, "affiliate", "id"),
        item.get("affiliate_id"),
    )
    return CommissionRow(
        where=where,
        source_id=required(item.get("id"), "commission id"),
        partner_source_id=required(partner, "affiliate"),
        referral_source_id=first(dig(sale, "referral", "id")),
        sale_source_id=first(sale.get("id")),
        # The Stripe charge the sale was (sale.stripe_charge_id, Rewardful's sale object), so a Stripe refund after
        # the move reverses the commission.
        processor_payment_id=first(sale.get("stripe_charge_id")),
        sale_amount_minor=sale_minor,
        commission_amount_minor=money(_amount(item.get("amount")), currency, given_in="minor"),
        currency=currency,
        status=COMMISSION_STATES[state],
        created_at=time_or_epoch(first(sale.get("charged_at"), item.get("created_at"))),
        due_at=time_or_epoch(item.get("due_at")),
    )


def _amount(value: Any) -> Any:
    if value is None or text(value) == "":
        raise RowRefused("amount is missing")
    return value


def _read_csv(builder: SourceBuilder, csv_file: CsvFile) -> None:
    columns = {
        canonical: next((alias for alias in aliases if alias in csv_file.columns), "")
        for canonical, aliases in CSV_ALIASES.items()
    }
    if not columns["email"] and not columns["first_name"]:
        raise unknown_file(csv_file.name, EXPECTED)
    missing = [canonical for canonical in ("email", "first_name", "last_name") if not columns[canonical]]
    if missing:
        csv_file.require(*missing)
    builder.saw_partner_file = True
    seen: set[str] = set()
    for line, raw in csv_file.rows:
        row = {canonical: raw.get(column, "") if column else "" for canonical, column in columns.items()}
        where = where_csv(csv_file.name, line)
        partner_id = row["email"].lower()
        builder.attempt(where, "partner", _csv_partner, where, row, seen, partner_id=partner_id)
        if partner_id not in seen:
            continue  # the partner was refused: the reason is given once, on this line
        if row["token"]:
            builder.attempt(where, "link", _csv_link, where, partner_id, row["token"])
        if row["stripe_customer_id"]:
            builder.attempt(where, "referral", _csv_referral, where, partner_id, row)


def _csv_partner(where: str, row: dict[str, str], seen: set[str]) -> PartnerRow | None:
    email = email_of(row["email"], required=True)
    if email in seen:
        return None  # one row per referred customer: the affiliate repeats
    seen.add(email)
    payout_email, rail = _payout(row)
    return PartnerRow(
        where=where,
        source_id=email,
        email=email,
        name=name_of(row["first_name"], row["last_name"]),
        payout_email=payout_email,
        payout_rail=rail,
    )


def _csv_link(where: str, partner_id: str, token: str) -> LinkRow:
    code = code_of(token)
    return LinkRow(where=where, source_id=code, partner_source_id=partner_id, code=code)


def _csv_referral(where: str, partner_id: str, row: dict[str, str]) -> ReferralRow:
    stripe_id = row["stripe_customer_id"]
    if not stripe_id.startswith("cus_"):
        raise RowRefused(f"stripe_customer_id {stripe_id!r} is not a Stripe customer id (cus_...)")
    return ReferralRow(
        where=where,
        source_id=stripe_id,
        partner_source_id=partner_id,
        processor_customer_id=stripe_id,
        status="customer",
        link_code=row["token"],
    )
