"""FirstPromoter: the company API's lists saved as JSON, one file per list (or per page: several files of one list
are read together). Every field read and where FirstPromoter documents it (firstpromoter/docs, the OpenAPI files
named below; tests/imports/fixtures/firstpromoter_api/README.md and firstpromoter_v1/README.md have the tables):

- v2 promoters, GET /api/v2/company/promoters (api-reference-v2/api-admin/promoters/openapi-v2-promoters.json,
  PromoterListItem, answered as {"data": [...], "meta": {...}}): id, email, name, profile.first_name/last_name,
  joined_at, archived_at (nullable), promoter_campaigns[].id, .state (pending, accepted, rejected, blocked,
  inactive, not_set) and .ref_token (the ?fpr= code of that campaign), selected_payout_method.id (nullable). The
  promoter carries no PayPal email: selected_payout_method is only {id, method, date_added, is_disabled}. Its
  `balances` ("Earnings balance breakdown") is not read as owed: earnings, in FirstPromoter's words, include what
  was paid out.
- Campaigns and coupons, on the promoter: v2 promoter_campaigns[].campaign_id, .campaign {id, name, color}, .state
  and .coupon (a string, nullable; PromoterCampaign in openapi-v2-promoters.json and
  api-admin/promoter-campaigns/openapi-v2-promoter-campaigns.json); v1 promotions[].campaign_id, .campaign_name,
  .promo_code (Promotion). Each campaign becomes a group with the program's terms (its rewards are objects of
  their own, not in these answers), the promoter is placed in the group of the first campaign they are accepted
  in, and each campaign's coupon becomes the promoter's coupon code.
- v2 payout methods (optional), GET /api/v2/company/payout_methods?filters[promoter_id]=<id>
  (api-reference-v2/api-advanced/payout-methods-api/openapi-v2-advanced-payout-methods.json, PayoutMethod, a bare
  list): id, method (paypal, wise, ...), details.paypal_email / details.wise_email. A promoter's payout email is the
  details of the method its selected_payout_method.id names.
- v2 referrals, GET /api/v2/company/referrals (openapi-v2-referrals.json, Referral, a bare list): id, email, uid,
  state, customer_since (nullable), created_at, promoter_campaign.promoter_id / .promoter.id.
- v2 commissions, GET /api/v2/company/commissions (openapi-v2-commissions.json, Commission, a bare list): id,
  status (pending, approved, denied), is_paid, unit (cash or a non-cash reward), amount and sale_amount (integer
  cents), event_id (nullable; the billing provider's invoice or charge id), created_at,
  promoter_campaign.promoter_id / .promoter.id, referral {id, email, uid} (nullable). **No currency**: amounts
  are in the account's currency, which the API does not say; it is asked once (`manage.py import --currency`, the
  Import page's Currency field). original_sale_currency (nullable) is the sale's currency *before* conversion and
  is never read.
- v1 promoters, GET /v1/promoters/list (api-reference-v1/promoters-api/openapi-promoters.json, Promoter, a bare
  list): id, status (approved, pending, denied; the examples and webhooks also say active, blocked), email,
  created_at, profile.first_name/last_name/paypal_email, promotions[].id and .ref_id (the ?fpr= code),
  current_balance.cash ("Current unpaid balance", webhooks/event-types.mdx; cents) and paid_balance.cash.
- v1 leads, GET /v1/leads/list (api-reference-v1/leads-api/openapi-leads.json, Lead, a bare list): id, state
  (signup, active, subscribed, denied, cancelled), email, uid, customer_since, created_at, promoter.id,
  promotion.ref_id.
- v1 rewards, GET /v1/rewards/list (api-reference-v1/rewards-api/openapi-rewards.json, RewardWithoutLead, a bare
  list): id, status (approved, pending, denied), amount (cents for cash, webhooks/reward-created.mdx), unit,
  conversion_amount (the sale, cents), event_id, created_at, lead.id/uid/email, promoter.id. No currency, and no
  paid flag: a v1 payout is not tied to rewards. Which approved rewards were paid is read from the promoter's
  paid_balance.cash (the v1 promoters list): the oldest approved cash rewards that add up to it exactly.

Commission status: pending -> pending and held for review (it awaits a manual approval on FirstPromoter: no
approval run here credits it until an owner releases it), approved -> approved, approved with is_paid -> paid,
denied -> void (skipped). Non-cash rewards (credits, points, free months, discounts) are not money owed: skipped.
Both are decided by status and unit before any amount or currency is read."""

from core.currency import Currency
from imports.platforms.base import (
    Files,
    Item,
    SourceBuilder,
    code_of,
    dig,
    email_of,
    first,
    group_name_of,
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
    CodeRow,
    CommissionRow,
    GroupRow,
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
    "FirstPromoter's commissions carry no currency (their amounts are in the account's currency): "
    "give that currency with --currency (the Import page's Currency field)"
)
PAYOUT_RAILS = {"paypal": "paypal_email", "wise": "wise_email"}
# event_id is the billing provider's id of the sale: for Stripe the invoice id (subscriptions) or the charge id
# (one-time charges), per the v1 rewards API (PUT /rewards/update). Kept as the sale's payment id when it is
# Stripe's, so a Stripe refund after the move finds the imported sale.
STRIPE_PAYMENT_PREFIXES = ("in_", "ch_", "pi_", "py_")
# A referral that has paid at least once is a customer; a signup or trial is a lead.
CUSTOMER_STATES = {"subscribed", "active", "customer", "cancelled", "canceled", "refunded"}
# A referral FirstPromoter denied is credited to no one there: skipped, like a visit that never signed up.
DENIED_REFERRAL = "denied"
# v1 promoter status (and the webhooks' word) for a promoter switched off.
PROMOTER_OFF = ("denied", "blocked")
# v2 keeps the state per promoter campaign; blocked and rejected are set by POST /promoters/block and /reject.
CAMPAIGN_OFF = ("blocked", "rejected", "inactive")
V1_PAID_UNKNOWN = (
    "paid or not: FirstPromoter v1 rewards do not say; add the v1 promoters list, whose paid_balance tells it"
)
EXPECTED = (
    "FirstPromoter's promoters, referrals, commissions or payout methods JSON (GET /api/v2/company/promoters, "
    "/referrals, /commissions, /payout_methods; or v1 GET /v1/promoters/list, /v1/leads/list, /v1/rewards/list)"
)


def read(files: Files, *, currency: str = "") -> Source:
    """`currency`: the account's currency, for commissions that carry none (FirstPromoter's never do)."""
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
    promoters: dict[str, Item] = {}
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
            elif kind == "promoters" and text(item.get("id")):
                promoters.setdefault(text(item.get("id")), item)
            elif kind in ("commissions", "rewards") and text(item.get("currency")).upper() in Currency.values:
                named.add(text(item.get("currency")).upper())
    default = given or (next(iter(named)) if len(named) == 1 else "")
    if not default:
        _currency_needed(parsed)
    paid_v1 = _v1_paid(parsed, promoters)
    for name, kind, items in parsed:
        if kind == "promoters":
            builder.saw_partner_file = True
        for where, item in items_with_where(name, items):
            if kind == "promoters":
                builder.attempt(
                    where, "partner", _promoter, where, item, payout_methods, default, partner_id=text(item.get("id"))
                )
                builder.attempt(where, "link", _links, where, item)
                for entry in _campaign_entries(item):
                    campaign_id = _campaign_id(entry)
                    builder.attempt(where, "group", _campaign, where, entry, partner_id=campaign_id)
                    builder.attempt(where, "code", _coupon, where, item, entry)
            elif kind == "referrals":
                builder.attempt(where, "referral", _referral, where, item)
            elif kind in ("commissions", "rewards"):
                builder.attempt(where, "commission", _commission, where, item, referrals, default, paid_v1)
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    if "sale_amount" in sample or "is_paid" in sample or "commission_type" in sample:
        return "commissions"
    if "conversion_amount" in sample or "tier_level" in sample:
        return "rewards"  # v1 GET /rewards/list
    if "promoter_campaigns" in sample or "promotions" in sample or "profile" in sample:
        return "promoters"
    if "method" in sample and "details" in sample:
        return "payout_methods"
    if "uid" in sample or "promoter_campaign" in sample or "customer_since" in sample:
        return "referrals"  # v2 GET /referrals, v1 GET /leads/list
    raise unknown_file(name, EXPECTED)


def _owed_by_status(item: Item) -> bool:
    """Money that would be owed, by status and unit alone (an unknown status is refused later, not asked about)."""
    status = text(item.get("status")).lower()
    return status in ("pending", "approved") and (text(item.get("unit")).lower() or "cash") == "cash"


def _currency_needed(parsed: list[tuple[str, str, list[Item]]]) -> None:
    """With no currency given, a file of cash commissions that name none is refused as a whole: each of its rows
    would otherwise be refused alike, and the owner told hundreds of rows failed for one missing answer."""
    for name, kind, items in parsed:
        if kind in ("commissions", "rewards"):
            if any(_owed_by_status(item) and not text(item.get("currency")) for item in items):
                raise ImportFileError(f"{name}: {CURRENCY_MISSING}")


def _cents(value: object, field: str) -> int | None:
    """A v1 balance in cents: None when FirstPromoter sends none (null, as for a promoter never paid)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RowRefused(f"{field} {text(value)!r} is not an amount in cents")
    return value


def _v1_paid(parsed: list[tuple[str, str, list[Item]]], promoters: dict[str, Item]) -> dict[str, set[str] | None]:
    """Per promoter of a v1 rewards file, the ids of its approved cash rewards that were paid: the oldest ones adding
    up to its paid_balance.cash exactly (a v1 payout pays a promoter's whole unpaid balance, so what was paid is what
    was approved first). None when that cannot be told: no promoters list, or no oldest rewards add up to it."""
    approved: dict[str, list[tuple[str, str, int]]] = {}
    for _, kind, items in parsed:
        if kind != "rewards":
            continue
        for item in items:
            amount = item.get("amount")
            if text(item.get("status")).lower() != "approved" or not _owed_by_status(item):
                continue
            if isinstance(amount, bool) or not isinstance(amount, int):
                continue  # refused when the row is read
            promoter = text(dig(item, "promoter", "id"))
            approved.setdefault(promoter, []).append((text(item.get("created_at")), text(item.get("id")), amount))
    plan: dict[str, set[str] | None] = {}
    for promoter, rewards in approved.items():
        profile = promoters.get(promoter)
        if profile is None:
            plan[promoter] = None
            continue
        paid_balance = obj(profile.get("paid_balance")).get("cash")
        if isinstance(paid_balance, bool) or not isinstance(paid_balance, int | type(None)):
            plan[promoter] = None
            continue
        left, paid = paid_balance or 0, set()
        for _, reward_id, amount in sorted(rewards):
            if left <= 0:
                break
            left -= amount
            paid.add(reward_id)
        plan[promoter] = paid if left == 0 else None
    return plan


def _deactivated(item: Item) -> str:
    """Why FirstPromoter has the promoter switched off, in its own word; "" for an active one."""
    if text(item.get("archived_at")):
        return "archived on FirstPromoter"
    status = text(item.get("status")).lower()
    if status in PROMOTER_OFF:
        return f"{status} on FirstPromoter"
    states = {
        text(entry.get("state")).lower() for entry in seq(item.get("promoter_campaigns")) if isinstance(entry, dict)
    }
    states.discard("")
    # Off only when no campaign has it on (a promoter blocked from one campaign still earns in another).
    if states and not states - set(CAMPAIGN_OFF):
        word = next(state for state in CAMPAIGN_OFF if state in states)
        return f"{word} on FirstPromoter"
    return ""


def _reported_owed(item: Item, currency: str) -> tuple[tuple[str, int], ...]:
    """v1's current_balance.cash, "Current unpaid balance", in the account's currency. v2 shows no such figure."""
    if "current_balance" not in item or not currency:
        return ()
    owed = _cents(obj(item.get("current_balance")).get("cash"), "current_balance.cash")
    return ((currency, owed),) if owed is not None else ()


def _promoter(where: str, item: Item, payout_methods: dict[str, Item], currency: str) -> PartnerRow:
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
        deactivated=_deactivated(item),
        reported_owed=_reported_owed(item, currency),
        # current_balance is the payable balance: approved rewards, not those still pending.
        reported_owed_counts_pending=False,
        group_source_id=_main_campaign(item),
    )


def _campaign_entries(promoter: Item) -> list[Item]:
    """The promoter's campaigns: v2 promoter_campaigns, v1 promotions (each is one campaign's promotion)."""
    entries = [*seq(promoter.get("promoter_campaigns")), *seq(promoter.get("promotions"))]
    return [entry for entry in entries if isinstance(entry, dict)]


def _campaign_id(entry: Item) -> str:
    return first(entry.get("campaign_id"), dig(entry, "campaign", "id"))


def _main_campaign(promoter: Item) -> str:
    """The campaign whose group the promoter joins here (a partner is in one group of a program): the first one
    the promoter is accepted in (v2 state), else the first not switched off, else the first."""
    entries = [entry for entry in _campaign_entries(promoter) if _campaign_id(entry)]
    for wanted in (("accepted",), ("pending", "not_set", "")):
        for entry in entries:
            if text(entry.get("state")).lower() in wanted:
                return _campaign_id(entry)
    return _campaign_id(entries[0]) if entries else ""


def _campaign(where: str, entry: Item) -> GroupRow | None:
    """A campaign as a group, with the program's terms: FirstPromoter keeps a campaign's rewards apart from it
    (rewards_for_promoters, each a reward by id), so no rate comes with the campaign; and FirstPromoter marks no
    campaign as the default one, so each is a group of its own."""
    campaign_id = _campaign_id(entry)
    if not campaign_id:
        return None
    campaign = obj(entry.get("campaign"))
    name = group_name_of(first(campaign.get("name"), entry.get("campaign_name")), f"FirstPromoter {campaign_id}")
    return GroupRow(where=where, source_id=campaign_id, name=name)


def _coupon(where: str, promoter: Item, entry: Item) -> CodeRow | None:
    """The campaign's coupon code of the promoter: v2 promoter_campaigns[].coupon (a string, nullable), v1
    promotions[].promo_code."""
    value = entry.get("coupon") if "coupon" in entry else entry.get("promo_code")
    if value is None or value == {} or value == "":
        return None
    if not isinstance(value, str | int):
        raise RowRefused("a campaign's coupon is not a code")
    code = code_of(value)
    return CodeRow(
        where=where,
        source_id=f"{first(entry.get('id'), _campaign_id(entry))}:{code}",
        partner_source_id=required(promoter.get("id"), "promoter id"),
        code=code,
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
    if state == DENIED_REFERRAL:
        status = "visitor"
    elif state in CUSTOMER_STATES or text(item.get("customer_since")):
        status = "customer"
    else:
        status = "lead"  # signup (v1, v2), pending (v2: awaiting approval), moved (v2)
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "referral id"),
        partner_source_id=required(_promoter_id(item), "promoter"),
        email=email,
        customer_key=uid if uid != stripe_id else "",
        processor_customer_id=stripe_id,
        status=status,
        link_code=first(dig(item, "promoter_campaign", "ref_token"), dig(item, "promotion", "ref_id")),
        created_at=time_or_epoch(item.get("created_at")),
    )


def _commission(
    where: str,
    item: Item,
    referrals: dict[str, tuple[str, str]],
    default: str,
    paid_v1: dict[str, set[str] | None],
) -> CommissionRow:
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
    v1 = "conversion_amount" in item or "tier_level" in item
    if mapped == "approved" and not v1 and item.get("is_paid") is True:
        mapped = "paid"
    currency = known_currency(first(item.get("currency"), default))
    amount = item.get("amount")
    if amount is None or text(amount) == "":
        raise RowRefused("amount is missing")
    commission = money(amount, currency, given_in="minor")
    if mapped == "approved" and v1:
        paid = paid_v1.get(partner_id)
        if paid is None:
            raise RowRefused(V1_PAID_UNKNOWN)
        mapped = "paid" if source_id in paid else "approved"
    sale = first(item.get("sale_amount"), item.get("conversion_amount"), 0)
    event_id = first(item.get("event_id"), dig(item, "sale", "id"))
    return CommissionRow(
        where=where,
        source_id=source_id,
        partner_source_id=partner_id,
        referral_source_id=referral[0],
        sale_source_id=event_id,
        processor_payment_id=event_id if event_id.startswith(STRIPE_PAYMENT_PREFIXES) else "",
        sale_amount_minor=money(sale, currency, given_in="minor"),
        commission_amount_minor=commission,
        currency=currency,
        status=mapped,
        created_at=time_or_epoch(item.get("created_at")),
        held_reason=HELD_REASON if mapped == "pending" else "",
    )


def _referral_of(item: Item, referrals: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(referral id, its promoter id) for a commission: by the referral's id, else its uid or email. v2 names it
    `referral`, v1 `lead`."""
    for field in ("referral", "lead"):
        named = first(dig(item, field, "id"), item.get(f"{field}_id"))
        for key in (named, text(dig(item, field, "uid")), text(dig(item, field, "email")).lower()):
            if key and key in referrals:
                return referrals[key]
        if named:
            return named, ""
    return "", ""
