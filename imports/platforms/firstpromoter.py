"""FirstPromoter: the v2 company API's lists saved as JSON, one file each: GET /api/v2/company/promoters,
/api/v2/company/referrals and /api/v2/company/commissions (the list, or {"data": [...]}).

Links in the wild are ?fpr=<ref_token> (one per promoter campaign; promo codes are coupons, not links). Amounts are
cents. Commission status: pending -> pending, approved -> approved, approved with is_paid -> paid, denied -> void;
non-cash rewards (credits, points, free months, discounts) are refused: they are not money owed."""

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
    name_of,
    obj,
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

PLATFORM = "firstpromoter"
COMMISSION_STATUSES = {"pending": "pending", "approved": "approved", "denied": "void"}
# A referral that has paid at least once is a customer; a signup or trial is a lead.
CUSTOMER_STATES = {"subscribed", "active", "customer", "cancelled", "canceled", "refunded"}
EXPECTED = (
    "FirstPromoter's promoters, referrals or commissions JSON (GET /api/v2/company/promoters, /referrals, /commissions)"
)


def read(files: Files) -> Source:
    builder = SourceBuilder(PLATFORM)
    parsed: list[tuple[str, str, list[Item]]] = []
    for name, content in files:
        if not looks_like_json(content):
            raise ImportFileError(f"{name}: FirstPromoter files are the API's JSON answers; expected {EXPECTED}")
        items = json_items(name, content)
        parsed.append((name, _kind(name, items), items))
    # A commission names its referral by id, or only by the referral's uid or email: find the referral (and through
    # it the promoter, for a commission listed without one) in the referrals file.
    referrals: dict[str, tuple[str, str]] = {}
    for _, kind, items in parsed:
        if kind == "referrals":
            for item in items:
                found = (text(item.get("id")), _promoter_id(item))
                for key in (text(item.get("id")), text(item.get("uid")), text(item.get("email")).lower()):
                    if key:
                        referrals.setdefault(key, found)
    for name, kind, items in parsed:
        if kind == "promoters":
            builder.saw_partner_file = True
        for where, item in items_with_where(name, items):
            if kind == "promoters":
                builder.attempt(where, "partner", _promoter, where, item, partner_id=text(item.get("id")))
                for campaign in seq(item.get("promoter_campaigns")):
                    builder.attempt(where, "link", _link, where, item, campaign)
            elif kind == "referrals":
                builder.attempt(where, "referral", _referral, where, item)
            elif kind == "commissions":
                builder.attempt(where, "commission", _commission, where, item, referrals)
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    if "sale_amount" in sample or "is_paid" in sample or "commission_type" in sample:
        return "commissions"
    if "promoter_campaigns" in sample or "profile" in sample:
        return "promoters"
    if "uid" in sample or "promoter_campaign" in sample or "customer_since" in sample:
        return "referrals"
    raise unknown_file(name, EXPECTED)


def _promoter(where: str, item: Item) -> PartnerRow:
    profile = obj(item.get("profile"))
    paypal = email_of(first(profile.get("paypal_email"), item.get("paypal_email")), required=False)
    return PartnerRow(
        where=where,
        source_id=required(item.get("id"), "promoter id"),
        email=email_of(item.get("email"), required=True),
        name=first(item.get("name"), name_of(item.get("first_name"), item.get("last_name")))
        or name_of(profile.get("first_name"), profile.get("last_name")),
        payout_email=paypal,
        payout_rail="paypal" if paypal else "",
        created_at=time_or_epoch(first(item.get("joined_at"), item.get("created_at"))),
    )


def _link(where: str, promoter: Item, campaign: Any) -> LinkRow | None:
    if not isinstance(campaign, dict):
        raise RowRefused("a promoter campaign is not an object")
    if not text(campaign.get("ref_token")):
        return None  # a campaign the promoter joined without a link (coupon only)
    code = code_of(campaign.get("ref_token"))
    return LinkRow(
        where=where,
        source_id=first(campaign.get("id"), code),
        partner_source_id=required(promoter.get("id"), "promoter id"),
        code=code,
    )


def _promoter_id(item: Item) -> str:
    return first(
        dig(item, "promoter_campaign", "promoter", "id"),
        dig(item, "promoter_campaign", "promoter_id"),
        dig(item, "promoter", "id"),
        item.get("promoter_id"),
    )


def _referral(where: str, item: Item) -> ReferralRow:
    uid = text(item.get("uid"))
    stripe_id = first(item.get("stripe_customer_id"), item.get("customer_id"), uid if uid.startswith("cus_") else "")
    if stripe_id and not stripe_id.startswith("cus_"):
        stripe_id = ""
    email = email_of(item.get("email"), required=False)
    if not email and not uid and not stripe_id:
        raise RowRefused("no customer: neither an email nor a uid")
    state = text(item.get("state")).lower()
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "referral id"),
        partner_source_id=required(_promoter_id(item), "promoter"),
        email=email,
        customer_key=uid if uid != stripe_id else "",
        processor_customer_id=stripe_id,
        status="customer" if state in CUSTOMER_STATES or text(item.get("customer_since")) else "lead",
        link_code=first(dig(item, "promoter_campaign", "ref_token")),
        created_at=time_or_epoch(item.get("created_at")),
    )


def _commission(where: str, item: Item, referrals: dict[str, tuple[str, str]]) -> CommissionRow:
    status = text(item.get("status")).lower()
    if status not in COMMISSION_STATUSES:
        raise RowRefused(f"status {status!r} is not pending, approved or denied")
    unit = text(item.get("unit")).lower() or "cash"
    if unit != "cash":
        raise RowRefused(f"a {unit} reward, not money: not imported")
    mapped = COMMISSION_STATUSES[status]
    if mapped == "approved" and item.get("is_paid") is True:
        mapped = "paid"
    currency = known_currency(first(item.get("currency"), item.get("original_sale_currency")))
    amount = item.get("amount")
    if amount is None or text(amount) == "":
        raise RowRefused("amount is missing")
    sale = first(item.get("sale_amount"), 0)
    referral = _referral_of(item, referrals)
    return CommissionRow(
        where=where,
        source_id=required(item.get("id"), "commission id"),
        partner_source_id=required(_promoter_id(item) or referral[1], "promoter"),
        referral_source_id=referral[0],
        sale_source_id=first(item.get("event_id"), dig(item, "sale", "id")),
        sale_amount_minor=money(sale, currency, given_in="minor"),
        commission_amount_minor=money(amount, currency, given_in="minor"),
        currency=currency,
        status=mapped,
        created_at=time_or_epoch(item.get("created_at")),
    )


def _referral_of(item: Item, referrals: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(referral id, its promoter id) for a commission: by the referral's id, else its uid or email."""
    named = first(dig(item, "referral", "id"), item.get("referral_id"))
    for key in (named, text(dig(item, "referral", "uid")), text(dig(item, "referral", "email")).lower()):
        if key and key in referrals:
            return referrals[key]
    return named, ""
