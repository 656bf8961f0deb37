"""Rewardful: the REST API's lists saved as JSON, one file a page (GET /v1/affiliates?expand[]=links&expand[]=
commission_stats&expand[]=campaign, /v1/referrals?expand[]=affiliate, /v1/commissions?expand[]=sale, and for the
campaigns and coupons GET /v1/campaigns and /v1/affiliate_coupons; the {"pagination": {...}, "data": [...]} answer
or its list), or the affiliate CSV Rewardful documents for moving affiliates (first_name,
last_name, email, paypal_email, wise_email, token, stripe_customer_id; one row per referred customer).

Fields read, and where each is documented (D = developers.rewardful.com/rest-api, H = help.rewardful.com/en/articles;
tests/imports/fixtures/rewardful_api/README.md has the table):
  envelope     pagination {previous_page, current_page, next_page, count, limit, total_pages, total_count}, data
                                                                                   D overview ("Pagination")
  affiliate    id, email, first_name, last_name, paypal_email, wise_email (nullable), created_at, state
               (active, disabled, suspicious), links[] {id, token}                 D affiliates/object, payouts object;
                                                                                   H 5146950, H 5181412 (states)
  affiliate    commission_stats.currencies.<ISO>.unpaid.cents                      D affiliates/list documents the
                                                                                   expand only; its shape is read as
                                                                                   public clients of the API read it
  referral     id, conversion_state (visitor, lead, conversion), customer {id, email} (nullable), stripe_customer_id,
               affiliate.id, link.token, became_lead_at, created_at                D referrals/object, referrals/list
  commission   id, amount (cents), currency, state (pending, due, paid, voided), due_at, created_at,
               sale {id, currency, sale_amount_cents, stripe_charge_id, charged_at, affiliate.id, referral.id}
                                                                                   D commissions/object, /list
  campaign     id, name, default, reward_type (percent, amount), commission_percent, commission_amount_cents,
               commission_amount_currency, max_commission_period_months, max_commissions (nullable),
               days_until_commissions_are_due                                      D campaigns/the-campaign-object;
               the affiliate's campaign with expand[]=campaign                     dubinc/dub lib/rewardful (api.ts,
                                                                                   types.ts RewardfulAffiliate)
  coupon       id, token, affiliate_id, archived, archived_at; the affiliate's coupon (nullable)
                                                                                   D affiliate-coupons/the-affiliate-
                                                                                   coupon-object, affiliates/object

Links in the wild are ?via=<token> (Rewardful's default), or any parameter listed in the tracking script's
data-rewardful-params (H 12856689: ?ref=, ?rfsn= ...), each an alias to turn on here. Commission states: pending ->
pending, due -> approved (past its hold, owed), paid -> paid, voided -> void. A voided commission and a visitor
referral are skipped by their state before anything else is read. A disabled or suspicious affiliate (any state but
active) arrives deactivated. What Rewardful showed an affiliate as owed is commission_stats' unpaid figure per
currency: Rewardful's "unpaid" commissions are the due and pending ones (H 5146950), the same commissions this import
leaves owed (pending and approved, not paid); due is part of unpaid, so adding it again would count it twice. A
commission's sale keeps sale.stripe_charge_id (the Stripe charge), so a Stripe refund after the move reverses the
imported commission.

A campaign becomes a group (see _campaign for its terms); the default campaign is the program's default group, whose
terms stay the program's settings. Each affiliate is placed in their campaign's group, and each affiliate coupon
not archived becomes the affiliate's coupon code. A campaign's Stripe coupon (stripe_coupon_id) names no amount, so
the group's customer discount is left for the owner to set."""

from decimal import Decimal
from typing import Any

from core.currency import Currency
from imports.platforms.base import (
    CsvFile,
    Files,
    Item,
    SourceBuilder,
    code_of,
    days_of,
    dig,
    email_of,
    first,
    group_name_of,
    items_with_where,
    json_items,
    looks_like_json,
    minor_amount_of,
    money,
    months_of,
    name_of,
    obj,
    percent_of,
    read_csv,
    required,
    seq,
    text,
    time_or_epoch,
    unknown_file,
    where_csv,
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

PLATFORM = "rewardful"
COMMISSION_STATES = {"pending": "pending", "due": "approved", "paid": "paid", "voided": "void"}
REFERRAL_STATES = {"visitor": "visitor", "lead": "lead", "conversion": "customer"}
# Rewardful's affiliate states (H 5146950, H 5181412): only an active affiliate's links track.
ACTIVE_STATE = "active"
STATE_WORDS = {"disabled": "disabled on Rewardful", "suspicious": "marked suspicious on Rewardful"}
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
    if "reward_type" in sample or "commission_percent" in sample or "days_until_commissions_are_due" in sample:
        return "campaigns"
    if "token" in sample and "affiliate_id" in sample and ("external_id" in sample or "archived" in sample):
        return "coupons"
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
    _check_shape(name, kind, items)
    if kind == "affiliates":
        builder.saw_partner_file = True
    if kind == "campaigns":
        builder.saw_group_file = True
    for where, item in items_with_where(name, items):
        if kind == "affiliates":
            builder.attempt(where, "partner", _affiliate, where, item, partner_id=text(item.get("id")))
            for link in seq(item.get("links")):
                builder.attempt(where, "link", _link, where, item, link)
            campaign = obj(item.get("campaign"))
            if campaign:
                builder.attempt(where, "group", _campaign, where, campaign, partner_id=text(campaign.get("id")))
            if obj(item.get("coupon")):
                builder.attempt(where, "code", _coupon, where, item["coupon"], text(item.get("id")))
        elif kind == "campaigns":
            builder.attempt(where, "group", _campaign, where, item, partner_id=text(item.get("id")))
        elif kind == "coupons":
            builder.attempt(where, "code", _coupon, where, item, text(item.get("affiliate_id")))
        elif kind == "referrals":
            builder.attempt(where, "referral", _referral, where, item)
        elif kind == "commissions":
            builder.attempt(where, "commission", _commission, where, item)


def _check_shape(name: str, kind: str, items: list[Item]) -> None:
    """Refuses a file of a known kind whose objects are not shaped as the reader reads them: a wrong shape would
    otherwise import quietly wrong (no links, no sales, owed figures from elsewhere)."""
    for number, item in enumerate(items, start=1):
        if kind == "affiliates":
            if "links" in item and not isinstance(item["links"], list):
                raise _shape_error(name, number, "links", "a list of link objects (GET /v1/affiliates?expand[]=links)")
            if "commission_stats" in item:
                _check_stats(name, number, item["commission_stats"])
        elif kind == "commissions" and "sale" in item and not isinstance(item["sale"], dict | None):
            raise _shape_error(name, number, "sale", "the sale object (GET /v1/commissions?expand[]=sale)")
        elif kind == "referrals" and not isinstance(item.get("customer"), dict | None):
            raise _shape_error(name, number, "customer", "the customer object or null")


def _check_stats(name: str, number: int, stats: Any) -> None:
    currencies = dig(stats, "currencies") if isinstance(stats, dict) else None
    if not isinstance(currencies, dict):
        raise _shape_error(name, number, "commission_stats.currencies", "an object of figures per currency")
    for code, figures in currencies.items():
        cents = dig(figures, "unpaid", "cents")
        if not isinstance(cents, int) or isinstance(cents, bool) or cents < 0:
            raise _shape_error(name, number, f"commission_stats.currencies.{code}.unpaid.cents", "whole cents")


def _shape_error(name: str, number: int, field: str, expected: str) -> ImportFileError:
    return ImportFileError(
        f"{name}: item {number}: {field} is not {expected}, as Rewardful's API answers; "
        "the file was refused as a whole (save the list again with the documented expand[] parameters)"
    )


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
        deactivated=_deactivated(item.get("state")),
        reported_owed=_reported_owed(item.get("commission_stats")),
        # The affiliate's campaign (expand[]=campaign: the object; otherwise campaign_id where given).
        group_source_id=first(dig(item, "campaign", "id"), item.get("campaign_id")),
    )


def _campaign(where: str, item: Item) -> GroupRow:
    """A campaign as a group. Rewardful pays on every payment of a referred customer, for at most
    max_commission_period_months (null: for as long as the customer pays): recurring here, for those months
    (0: lifetime); one commission only (max_commissions 1, or a period of 0 months) is a one-off commission. Other
    max_commissions limits have no equal here and are not carried. days_until_commissions_are_due is the hold."""
    source_id = required(item.get("id"), "campaign id")
    name = group_name_of(item.get("name"), f"Rewardful campaign {source_id}")
    if item.get("default") is True:
        return GroupRow(where=where, source_id=source_id, name=name, is_default=True)
    reward = text(item.get("reward_type")).lower()
    hold = item.get("days_until_commissions_are_due")
    hold_days = None if hold is None else days_of(hold, "days_until_commissions_are_due")
    if not reward:
        # A campaign named only ({id, name}, as a commission carries it): the program's terms.
        return GroupRow(where=where, source_id=source_id, name=name, hold_days=hold_days)
    if reward == "percent":
        rate = percent_of(item.get("commission_percent"), "commission_percent")
        kinds = ("percent", "recurring_percent")
    elif reward == "amount":
        if text(item.get("commission_amount_currency")):
            known_currency(text(item.get("commission_amount_currency")))
        rate = Decimal(minor_amount_of(item.get("commission_amount_cents"), "commission_amount_cents"))
        kinds = ("fixed", "recurring_fixed")
    else:
        raise RowRefused(f"reward_type {reward!r} is not percent or amount")
    period = item.get("max_commission_period_months")
    months = 0 if period is None else months_of(period, "max_commission_period_months")
    one_off = item.get("max_commissions") == 1 or (period is not None and months == 0)
    return GroupRow(
        where=where,
        source_id=source_id,
        name=name,
        commission_type=kinds[0] if one_off else kinds[1],
        commission_rate=rate,
        duration_months=0 if one_off else months,
        hold_days=hold_days,
    )


def _coupon(where: str, item: Item, affiliate_id: str) -> CodeRow | None:
    """An affiliate coupon (the affiliate's `coupon`, or GET /v1/affiliate_coupons): its token is the code
    customers type. An archived one (deactivated on Rewardful) is not brought over."""
    if item.get("archived") is True or text(item.get("archived_at")):
        return None
    code = code_of(item.get("token"))
    return CodeRow(
        where=where,
        source_id=first(item.get("id"), code),
        partner_source_id=required(first(item.get("affiliate_id"), affiliate_id), "affiliate id"),
        code=code,
    )


def _deactivated(state: Any) -> str:
    """Why Rewardful had the affiliate switched off: any state but active (an affiliate saved before Rewardful
    had states carries none, and was active)."""
    value = text(state).lower()
    if not value or value == ACTIVE_STATE:
        return ""
    return STATE_WORDS.get(value, f"state {value} on Rewardful")


def _reported_owed(stats: Any) -> tuple[tuple[str, int], ...]:
    """commission_stats' unpaid cents per currency (due and pending: what this import leaves owed), in the
    currencies the service records; () when the file was saved without expand[]=commission_stats."""
    currencies = dig(stats, "currencies") if isinstance(stats, dict) else None
    if not isinstance(currencies, dict):
        return ()
    owed = []
    for code, figures in sorted(currencies.items()):
        upper = text(code).upper()
        if upper in Currency.values:
            owed.append((upper, int(dig(figures, "unpaid", "cents"))))
    return tuple(owed)


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
    partner_id = first(dig(item, "affiliate", "id"), item.get("affiliate_id"))
    if state == "visitor":
        # A visit that never signed up (no customer yet): skipped by its state, whatever else the row holds.
        return ReferralRow(
            where=where,
            source_id=required(item.get("id"), "referral id"),
            partner_source_id=partner_id,
            status="visitor",
        )
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
        partner_source_id=required(partner_id, "affiliate"),
        email=email,
        customer_key=text(customer.get("id")) if not text(customer.get("id")).startswith("cus_") else "",
        processor_customer_id=stripe_id,
        status=REFERRAL_STATES[state],
        link_code=first(dig(item, "link", "token")),
        created_at=time_or_epoch(first(item.get("became_lead_at"), item.get("created_at"))),
    )


def _commission(where: str, item: Item) -> CommissionRow:
    partner = first(
        dig(item, "sale", "affiliate", "id"),
        dig(item, "sale", "referral", "affiliate", "id"),
        dig(item, "affiliate", "id"),
        item.get("affiliate_id"),
    )
    state = text(item.get("state")).lower()
    if state not in COMMISSION_STATES:
        raise RowRefused(f"state {state!r} is not pending, due, paid or voided")
    source_id = required(item.get("id"), "commission id")
    if state == "voided":
        # Not owed (voided by hand, or by the sale's refund): skipped by its state, whatever its currency or amount.
        return CommissionRow(where=where, source_id=source_id, partner_source_id=partner, currency="", status="void")
    currency = known_currency(text(item.get("currency")))
    sale = obj(item.get("sale"))
    sale_minor = 0
    if sale:
        sale_currency = text(sale.get("currency")) or currency
        if known_currency(sale_currency) != currency:
            raise RowRefused(f"the sale is in {sale_currency.upper()} but the commission in {currency}")
        sale_minor = money(first(sale.get("sale_amount_cents"), 0), currency, given_in="minor")
    return CommissionRow(
        where=where,
        source_id=source_id,
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
