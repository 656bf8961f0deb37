"""FirstPromoter: the company API's lists saved as JSON, one file per list (or per page: several files of one list
are read together). Every field read and where FirstPromoter documents it (firstpromoter/docs, the OpenAPI files
named below; tests/imports/fixtures/firstpromoter_api/README.md has the table):

- v2 promoters, GET /api/v2/company/promoters (api-reference-v2/api-admin/promoters/openapi-v2-promoters.json,
  PromoterListItem, answered as {"data": [...], "meta": {...}}): id, email, name, profile.first_name/last_name,
  joined_at, promoter_campaigns[].id and .ref_token (the ?fpr= code of that campaign), selected_payout_method.id
  (nullable). The promoter carries no PayPal email: selected_payout_method is only {id, method, date_added,
  is_disabled}.
- v2 payout methods (optional), GET /api/v2/company/payout_methods?filters[promoter_id]=<id>
  (api-reference-v2/api-advanced/payout-methods-api/openapi-v2-advanced-payout-methods.json, PayoutMethod, a bare
  list): id, method (paypal, wise, ...), details.paypal_email / details.wise_email. A promoter's payout email is the
  details of the method its selected_payout_method.id names.
- v2 referrals, GET /api/v2/company/referrals (openapi-v2-referrals.json, Referral, a bare list): id, email, uid,
  state, customer_since (nullable), created_at, promoter_campaign.promoter_id / .promoter.id.
- v2 commissions, GET /api/v2/company/commissions (openapi-v2-commissions.json, Commission, a bare list): id,
  status (pending, approved, denied), is_paid, unit (cash or a non-cash reward), amount and sale_amount (integer
  cents), event_id (nullable), created_at, promoter_campaign.promoter_id / .promoter.id, referral {id, email, uid}
  (nullable). **No currency**: amounts are in the account's currency, which the API does not say; it is asked once
  (`manage.py import --currency`, the Import page's Currency field). A `currency` a row does carry wins; with none
  given, the one currency other rows carry is taken, else the row is refused naming --currency.
  original_sale_currency (nullable) is the sale's currency *before* conversion and is never read.
- v1 promoters, GET /v1/promoters/list (api-reference-v1/promoters-api/openapi-promoters.json, Promoter, a bare
  list): id, email, created_at, profile.first_name/last_name/paypal_email, promotions[].id and .ref_id (the ?fpr=
  code).

Commission status: pending -> pending and held for review (it awaits a manual approval on FirstPromoter: no
approval run here credits it until an owner releases it), approved -> approved, approved with is_paid -> paid,
denied -> void (skipped). Non-cash rewards (credits, points, free months, discounts) are not money owed: skipped."""

from core.currency import Currency
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
HELD_REASON = "pending manual approval on FirstPromoter"
CURRENCY_MISSING = (
    "currency is missing: FirstPromoter's commissions carry none (amounts are in the account's currency); "
    "give it with --currency (the Import page's Currency field)"
)
PAYOUT_RAILS = {"paypal": "paypal_email", "wise": "wise_email"}
# A referral that has paid at least once is a customer; a signup or trial is a lead.
CUSTOMER_STATES = {"subscribed", "active", "customer", "cancelled", "canceled", "refunded"}
EXPECTED = (
    "FirstPromoter's promoters, referrals, commissions or payout methods JSON (GET /api/v2/company/promoters, "
    "/referrals, /commissions, /payout_methods; or v1 GET /v1/promoters/list)"
)


def read(files: Files, *, currency: str = "") -> Source:
    """`currency`: the account's currency, for commissions that carry none (v2 commissions never do)."""
    given = currency.strip().upper()
    if given and given not in Currency.values:
        raise ImportFileError(f"unknown currency {currency.strip()!r} (known: {', '.join(Currency.values)})")
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
    payout_methods: dict[str, Item] = {}
    named: set[str] = set()
    for _, kind, items in parsed:
        for item in items:
            if kind == "referrals":
                found = (text(item.get("id")), _promoter_id(item))
                for key in (text(item.get("id")), text(item.get("uid")), text(item.get("email")).lower()):
                    if key:
                        referrals.setdefault(key, found)
            elif kind == "payout_methods" and text(item.get("id")):
                payout_methods.setdefault(text(item.get("id")), item)
            elif kind == "commissions" and text(item.get("currency")).upper() in Currency.values:
                named.add(text(item.get("currency")).upper())
    default = given or (next(iter(named)) if len(named) == 1 else "")
    for name, kind, items in parsed:
        if kind == "promoters":
            builder.saw_partner_file = True
        for where, item in items_with_where(name, items):
            if kind == "promoters":
                builder.attempt(
                    where, "partner", _promoter, where, item, payout_methods, partner_id=text(item.get("id"))
                )
                builder.attempt(where, "link", _links, where, item)
            elif kind == "referrals":
                builder.attempt(where, "referral", _referral, where, item)
            elif kind == "commissions":
                builder.attempt(where, "commission", _commission, where, item, referrals, default)
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    if "sale_amount" in sample or "is_paid" in sample or "commission_type" in sample:
        return "commissions"
    if "promoter_campaigns" in sample or "promotions" in sample or "profile" in sample:
        return "promoters"
    if "method" in sample and "details" in sample:
        return "payout_methods"
    if "uid" in sample or "promoter_campaign" in sample or "customer_since" in sample:
        return "referrals"
    raise unknown_file(name, EXPECTED)


def _promoter(where: str, item: Item, payout_methods: dict[str, Item]) -> PartnerRow:
    profile = obj(item.get("profile"))
    rail, payout = "", ""
    # v1: profile.paypal_email. v2: the details of the payout method the promoter selected.
    paypal = email_of(first(profile.get("paypal_email"), item.get("paypal_email")), required=False)
    if paypal:
        rail, payout = "paypal", paypal
    else:
        method = payout_methods.get(text(dig(item, "selected_payout_method", "id")))
        if method is not None:
            kind = text(method.get("method")).lower()
            if kind in PAYOUT_RAILS:
                payout = email_of(dig(method, "details", PAYOUT_RAILS[kind]), required=False)
                rail = kind if payout else ""
    return PartnerRow(
        where=where,
        source_id=required(item.get("id"), "promoter id"),
        email=email_of(item.get("email"), required=True),
        name=first(item.get("name"), name_of(item.get("first_name"), item.get("last_name")))
        or name_of(profile.get("first_name"), profile.get("last_name")),
        payout_email=payout,
        payout_rail=rail,
        created_at=time_or_epoch(first(item.get("joined_at"), item.get("created_at"))),
    )


def _links(where: str, promoter: Item) -> list[LinkRow]:
    """v2: one link per promoter campaign, its ref_token; v1: one per promotion, its ref_id."""
    if "promoter_campaigns" not in promoter and "promotions" not in promoter:
        raise RowRefused("no links: the promoter has neither promoter_campaigns (v2) nor promotions (v1)")
    partner_id = required(promoter.get("id"), "promoter id")
    links: list[LinkRow] = []
    for entries, field in (("promoter_campaigns", "ref_token"), ("promotions", "ref_id")):
        for entry in seq(promoter.get(entries)):
            if not isinstance(entry, dict):
                raise RowRefused(f"a promoter's {entries} entry is not an object")
            if not text(entry.get(field)):
                continue  # a campaign the promoter joined without a link (coupon only)
            code = code_of(entry.get(field))
            links.append(
                LinkRow(where=where, source_id=first(entry.get("id"), code), partner_source_id=partner_id, code=code)
            )
    return links


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


def _commission(where: str, item: Item, referrals: dict[str, tuple[str, str]], default: str) -> CommissionRow:
    status = text(item.get("status")).lower()
    if status not in COMMISSION_STATUSES:
        raise RowRefused(f"status {status!r} is not pending, approved or denied")
    unit = text(item.get("unit")).lower() or "cash"
    mapped = COMMISSION_STATUSES[status]
    referral = _referral_of(item, referrals)
    source_id = required(item.get("id"), "commission id")
    partner_id = required(_promoter_id(item) or referral[1], "promoter")
    if mapped == "void" or unit != "cash":
        # Not owed (denied, or a non-cash reward): skipped by status, whatever its amount or currency says.
        return CommissionRow(where=where, source_id=source_id, partner_source_id=partner_id, currency="", status="void")
    if mapped == "approved" and item.get("is_paid") is True:
        mapped = "paid"
    try:
        currency = known_currency(first(item.get("currency"), default))
    except RowRefused as refused:
        raise RowRefused(CURRENCY_MISSING if refused.reason == "currency is missing" else refused.reason) from None
    amount = item.get("amount")
    if amount is None or text(amount) == "":
        raise RowRefused("amount is missing")
    sale = first(item.get("sale_amount"), 0)
    return CommissionRow(
        where=where,
        source_id=source_id,
        partner_source_id=partner_id,
        referral_source_id=referral[0],
        sale_source_id=first(item.get("event_id"), dig(item, "sale", "id")),
        sale_amount_minor=money(sale, currency, given_in="minor"),
        commission_amount_minor=money(amount, currency, given_in="minor"),
        currency=currency,
        status=mapped,
        created_at=time_or_epoch(item.get("created_at")),
        held_reason=HELD_REASON if mapped == "pending" else "",
    )


def _referral_of(item: Item, referrals: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(referral id, its promoter id) for a commission: by the referral's id, else its uid or email."""
    named = first(dig(item, "referral", "id"), item.get("referral_id"))
    for key in (named, text(dig(item, "referral", "uid")), text(dig(item, "referral", "email")).lower()):
        if key and key in referrals:
            return referrals[key]
    return named, ""
