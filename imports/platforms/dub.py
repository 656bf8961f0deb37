"""Dub: the API's list answers saved as JSON, one file per page: GET /partners (each enrolled partner with its
links), /links, /customers?includeExpandedFields=true (the customer's link and partner) and /commissions. Each is a
bare JSON array (dubinc/dub apps/web/lib/openapi/*: `z.array(...)`); /partners and /links page by `page` and
`pageSize` (at most 100), /customers and /commissions by `startingAfter=<last id>` (their `page` is deprecated).

Every field read, and the dubinc/dub zod schema that documents it (tests/imports/fixtures/dub_api/README.md has the
table):

- Partner (EnrolledPartnerSchema, partners.ts with ProgramEnrollmentSchema, programs.ts): id (partnerId too), email
  (nullable: a partner without one is refused), name, companyName, paypalEmail (nullable) and defaultPayoutMethod,
  createdAt (the enrolment's), status (ProgramEnrollmentStatus) and bannedReason, links (ProgramPartnerLinkSchema,
  nullable).
- Link (LinkSchema, links.ts): id, key (the code), domain, partnerId (null for the workspace's own links), externalId
  (the owner's id for the link: it does not make the row a customer).
- Customer (CustomerEnrichedSchema, customers.ts): id, externalId (the customer key), email, stripeCustomerId,
  sales, saleAmount, firstSaleAt, createdAt, link {id, key} and partner {id}, both nullish (null: no partner referred
  the customer, who is then not a referral and is left out).
- Commission (CommissionEnrichedSchema, commissions.ts): id, type, amount (the sale, cents; 0 for click, lead and
  custom commissions), earnings (the partner's commission, cents; negative for a clawback), currency (lower case;
  Dub converts sales to USD and keeps the original currency only when it has no rate), status (CommissionStatus),
  invoiceId (nullable), createdAt, partner {id}, customer {id} (nullish).

- Group (GroupSchema, groups.ts; GET /groups): id, name, slug ("default": the program's default group),
  holdingPeriodDays, saleReward {type, amountInPercentage, amountInCents, maxDuration} (RewardSchema, rewards.ts),
  discount {amount, type, maxDuration} (DiscountSchema, discount.ts), nullish each; a partner's groupId places the
  partner in that group.
- Discount code (DiscountCodeSchema, discount.ts; GET /discount-codes): id, code, partnerId, disabledAt: the
  partner's coupon code.

Enrolment status: approved, archived (Dub's ACTIVE_ENROLLMENT_STATUSES) and invited (commission-eligible) arrive
active; banned, deactivated and rejected (Dub's INACTIVE_ENROLLMENT_STATUSES), pending (an application never
approved) and declined (an invitation turned down) arrive deactivated, their links off, with the reason.

Commission status, decided before any amount or currency is read: pending -> pending; hold (Dub's fraud hold) ->
pending and held for review; processed (due, in a payout not yet paid) -> approved; paid -> paid; refunded,
duplicate, fraud and canceled -> void (skipped). A clawback (custom commission with negative earnings) that is still
owed nets against the same partner's owed commissions of its currency (same status first, latest first), so the
balance here is Dub's; one already paid out changed nothing owed and is skipped.

What Dub shows as owed is not in these answers: a partner's totalCommissions sums pending, processed and paid
earnings of every currency (sync-total-commissions.ts) and payouts list only commissions past the holding period, so
PartnerRow.reported_owed stays empty.

A commission's invoiceId is the Stripe invoice id with Dub's Stripe integration (or the id the owner gave Dub's
track-sale call): kept as the sale's payment id, so a Stripe refund of that invoice after the move finds the sale."""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from imports.platforms.base import (
    Files,
    Item,
    SourceBuilder,
    amount_take,
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
    netted_row,
    obj,
    percent_of,
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

PLATFORM = "dub"
# CommissionStatus, apps/web/prisma/schema/commission.prisma.
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
HELD_ON_DUB = "held for fraud review on Dub"
# ProgramEnrollmentStatus, apps/web/prisma/schema/program.prisma.
ACTIVE_ENROLMENTS = ("approved", "archived", "invited")
INACTIVE_ENROLMENTS = {
    "banned": "banned on Dub",
    "deactivated": "deactivated on Dub",
    "rejected": "application rejected on Dub",
    "pending": "application pending on Dub, never approved",
    "declined": "declined the invitation on Dub",
}
# BAN_PARTNER_REASONS, apps/web/lib/zod/schemas/partners.ts.
BAN_REASONS = {
    "tos_violation": "Terms of Service Violation",
    "inappropriate_content": "Inappropriate or Offensive Content",
    "fake_traffic": "Artificial Traffic Generation",
    "fraud": "Fraudulent Activity",
    "spam": "Spam or Misleading Content",
    "brand_abuse": "Brand Abuse or Trademark Violations",
}
EXPECTED = (
    "Dub's partners, links, customers, commissions, groups or discount codes JSON "
    "(GET /partners, /links, /customers?includeExpandedFields=true, /commissions, /groups, /discount-codes)"
)


@dataclass(frozen=True)
class _Clawback:
    where: str
    source_id: str
    partner_source_id: str
    referral_source_id: str
    amount_minor: int
    currency: str
    status: str


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
                        link_partner[text(link.get("id"))] = _partner_id(item)
    clawbacks: list[_Clawback] = []
    for name, kind, items in parsed:
        if kind == "partners":
            builder.saw_partner_file = True
        if kind == "groups":
            builder.saw_group_file = True
        for where, item in items_with_where(name, items):
            if kind == "groups":
                builder.attempt(where, "group", _group, where, item, partner_id=text(item.get("id")))
            elif kind == "discount_codes":
                builder.attempt(where, "code", _discount_code, where, item)
            elif kind == "partners":
                builder.attempt(where, "partner", _partner, where, item, partner_id=_partner_id(item))
                for link in seq(item.get("links")):
                    builder.attempt(where, "link", _link, where, link, _partner_id(item))
            elif kind == "links":
                builder.attempt(where, "link", _link, where, item, text(item.get("partnerId")))
            elif kind == "customers":
                builder.attempt(where, "referral", _customer, where, item, link_partner)
            elif kind == "commissions":
                builder.attempt(where, "commission", _commission, where, item, clawbacks)
    _net_clawbacks(builder, clawbacks)
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    """Which list the answer is, by the fields only that list's objects carry. A link carries `externalId` too (the
    owner's id for it), so links are told by `key` and `domain` before customers by `externalId`."""
    if not items:
        return "empty"
    sample = items[0]
    if "earnings" in sample:
        return "commissions"
    if "slug" in sample and ("saleReward" in sample or "holdingPeriodDays" in sample or "maxPartnerLinks" in sample):
        return "groups"
    if "code" in sample and "partnerId" in sample and ("linkId" in sample or "discountId" in sample):
        return "discount_codes"
    if "key" in sample and "domain" in sample:
        if "partnerId" not in sample:
            # GET /partners/links answers one partner's links without naming the partner.
            raise ImportFileError(
                f"{name}: these links name no partner (GET /partners/links answers one partner's links); "
                "save GET /links, or the partners' own links in GET /partners"
            )
        return "links"
    if "externalId" in sample or "stripeCustomerId" in sample or "firstSaleAt" in sample:
        if not any("link" in item or "partner" in item for item in items):
            raise ImportFileError(
                f"{name}: these customers name neither their link nor their partner; save "
                "GET /customers?includeExpandedFields=true"
            )
        return "customers"
    if "periodStart" in sample:
        raise ImportFileError(f"{name}: Dub's payouts are not read (a paid commission says it was paid); {EXPECTED}")
    if "email" in sample and ("status" in sample or "links" in sample or "paypalEmail" in sample):
        return "partners"
    raise unknown_file(name, EXPECTED)


def _partner_id(item: Item) -> str:
    return first(item.get("id"), item.get("partnerId"))


def _deactivated(item: Item) -> str:
    status = text(item.get("status")).lower()
    if not status:
        raise RowRefused("status is missing (Dub's enrolment status)")
    if status in ACTIVE_ENROLMENTS:
        return ""
    if status not in INACTIVE_ENROLMENTS:
        known = ", ".join((*ACTIVE_ENROLMENTS, *INACTIVE_ENROLMENTS))
        raise RowRefused(f"status {status!r} is not one of {known}")
    reason = BAN_REASONS.get(text(item.get("bannedReason")), "")
    return f"{INACTIVE_ENROLMENTS[status]} ({reason})" if status == "banned" and reason else INACTIVE_ENROLMENTS[status]


def _partner(where: str, item: Item) -> PartnerRow:
    deactivated = _deactivated(item)
    paypal = email_of(item.get("paypalEmail"), required=False)
    return PartnerRow(
        where=where,
        source_id=required(_partner_id(item), "partner id"),
        email=email_of(item.get("email"), required=True),
        name=first(item.get("name"), item.get("companyName")),
        payout_email=paypal,
        # A PayPal email is the payout rail unless the partner's default method is another (connect, stablecoin).
        payout_rail="paypal" if paypal and text(item.get("defaultPayoutMethod")) in ("", "paypal") else "",
        created_at=time_or_epoch(first(item.get("createdAt"), item.get("enrolledAt"))),
        deactivated=deactivated,
        group_source_id=text(item.get("groupId")),
    )


# The default group's slug (DEFAULT_PARTNER_GROUP, apps/web/lib/zod/schemas/groups.ts).
DEFAULT_GROUP_SLUG = "default"


def _group(where: str, item: Item) -> GroupRow:
    """A group (GroupSchema, groups.ts: GET /groups) with its sale reward and discount. The reward's maxDuration is
    in months (RewardSchema; Dub's importers map "first sale only" to 0): 0 is a one-off commission, null every
    payment for as long as the customer pays (recurring, lifetime), N recurring for N months. The discount
    (DiscountSchema, discount.ts; amount a percent or cents by type, maxDuration 0 once, null forever, N months) is
    the group's customer discount; one of amount 0 is none. The default group (slug "default") is the program's."""
    source_id = required(item.get("id"), "group id")
    name = group_name_of(item.get("name"), first(item.get("slug"), source_id))
    if text(item.get("slug")) == DEFAULT_GROUP_SLUG:
        return GroupRow(where=where, source_id=source_id, name=name, is_default=True)
    hold = item.get("holdingPeriodDays")
    terms: dict[str, Any] = {"hold_days": None if hold is None else days_of(hold, "holdingPeriodDays")}
    reward = obj(item.get("saleReward"))
    if reward:
        structure = text(reward.get("type")).lower()
        if structure == "percentage":
            rate = percent_of(reward.get("amountInPercentage"), "saleReward.amountInPercentage")
            kinds = ("percent", "recurring_percent")
        elif structure == "flat":
            rate = Decimal(minor_amount_of(reward.get("amountInCents"), "saleReward.amountInCents"))
            kinds = ("fixed", "recurring_fixed")
        else:
            raise RowRefused(f"saleReward.type {structure!r} is not percentage or flat")
        limit = reward.get("maxDuration")
        months = None if limit is None else months_of(limit, "saleReward.maxDuration")
        terms.update(
            commission_type=kinds[0] if months == 0 else kinds[1],
            commission_rate=rate,
            duration_months=months or 0,
        )
    terms.update(_discount(obj(item.get("discount"))))
    return GroupRow(where=where, source_id=source_id, name=name, **terms)


def _discount(discount: Item) -> dict[str, Any]:
    if not discount or discount.get("amount") in (0, "0", None):
        return {}
    structure = text(discount.get("type")).lower()
    terms: dict[str, Any]
    if structure == "percentage":
        terms = {"discount_type": "percent", "discount_percent": percent_of(discount.get("amount"), "discount.amount")}
    elif structure == "flat":
        # Dub keeps money in USD cents (its sales are converted to USD).
        amount = minor_amount_of(discount.get("amount"), "discount.amount")
        terms = {"discount_type": "amount", "discount_amount_minor": amount, "discount_currency": "USD"}
    else:
        raise RowRefused(f"discount.type {structure!r} is not percentage or flat")
    limit = discount.get("maxDuration")
    months = None if limit is None else months_of(limit, "discount.maxDuration")
    if months is None:
        terms["discount_duration"] = "forever"
    elif months == 0:
        terms["discount_duration"] = "once"
    else:
        terms.update(discount_duration="repeating", discount_duration_months=months)
    return terms


def _discount_code(where: str, item: Item) -> CodeRow | None:
    """A discount code (DiscountCodeSchema, discount.ts: GET /discount-codes): the partner's coupon code. One Dub
    disabled (disabledAt: the partner was banned or deactivated) is not brought over."""
    if text(item.get("disabledAt")):
        return None
    code = code_of(item.get("code"))
    return CodeRow(
        where=where,
        source_id=first(item.get("id"), code),
        partner_source_id=required(item.get("partnerId"), "partnerId"),
        code=code,
    )


def _link(where: str, link: Any, partner_id: str) -> LinkRow | None:
    if not isinstance(link, dict):
        raise RowRefused("a link is not an object")
    if not partner_id:
        return None  # a link of no partner (the workspace's own short links) is not a referral link
    code = code_of(link.get("key"))
    return LinkRow(where=where, source_id=first(link.get("id"), code), partner_source_id=partner_id, code=code)


def _paid_something(item: Item) -> bool | None:
    """Whether Dub counts a sale of the customer; None when the answer has none of the fields that say it."""
    if not any(key in item for key in ("sales", "saleAmount", "firstSaleAt")):
        return None
    counts = (item.get("sales"), item.get("saleAmount"))
    counted = any(isinstance(n, int | float) and not isinstance(n, bool) and n > 0 for n in counts)
    return counted or bool(text(item.get("firstSaleAt")))


def _customer(where: str, item: Item, link_partner: dict[str, str]) -> ReferralRow | None:
    for field in ("link", "partner"):
        if item.get(field) is not None and not isinstance(item.get(field), dict):
            raise RowRefused(f"{field} is not an object")
    link_id = first(dig(item, "link", "id"), item.get("linkId"))
    partner = first(dig(item, "partner", "id"), item.get("partnerId"), link_partner.get(link_id, ""))
    if not partner and not link_id:
        return None  # no partner referred this customer (CustomerEnrichedSchema: link and partner null)
    stripe_id = text(item.get("stripeCustomerId"))
    external = text(item.get("externalId"))
    email = email_of(item.get("email"), required=False)
    if not email and not external and not stripe_id:
        raise RowRefused("no customer: neither an email, an externalId nor a stripeCustomerId")
    paid = _paid_something(item)
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "customer id"),
        partner_source_id=required(partner, "partner (the customer's link names none)"),
        email=email,
        customer_key=external,
        processor_customer_id=stripe_id,
        status="customer" if (paid if paid is not None else bool(stripe_id)) else "lead",
        link_code=first(dig(item, "link", "key")),
        created_at=time_or_epoch(item.get("createdAt")),
    )


def _cents(item: Item, field: str, currency: str, *, negative: bool = False) -> int:
    """A cents field (an integer in Dub's schemas) in minor units, refused by the field's name."""
    value = item.get(field)
    if value is None or text(value) == "":
        raise RowRefused(f"{field} is missing")
    if isinstance(value, bool | dict | list):
        raise RowRefused(f"{field} is not a number")
    written = text(value)
    if negative:
        written = written.removeprefix("-")
    try:
        return money(written, currency, given_in="minor")
    except RowRefused as refused:
        raise RowRefused(f"{field}: {refused.reason}") from None


def _commission(where: str, item: Item, clawbacks: list[_Clawback]) -> CommissionRow | None:
    status = text(item.get("status")).lower()
    if status not in COMMISSION_STATUSES:
        raise RowRefused(f"status {status!r} is not one of {', '.join(COMMISSION_STATUSES)}")
    mapped = COMMISSION_STATUSES[status]
    source_id = required(item.get("id"), "commission id")
    partner = required(first(dig(item, "partner", "id"), item.get("partnerId")), "partner")
    customer = first(dig(item, "customer", "id"), item.get("customerId"))
    if mapped == "void":
        # Not owed: skipped by its status, whatever its amount or currency says.
        return CommissionRow(
            where=where, source_id=source_id, partner_source_id=partner, referral_source_id=customer, status="void"
        )
    currency = known_currency(text(item.get("currency")))
    clawback = text(item.get("earnings")).startswith("-")
    earnings = _cents(item, "earnings", currency, negative=clawback)
    if clawback:
        clawbacks.append(_Clawback(where, source_id, partner, customer, earnings, currency, mapped))
        return None
    invoice = first(item.get("invoiceId"))
    return CommissionRow(
        where=where,
        source_id=source_id,
        partner_source_id=partner,
        referral_source_id=customer,
        sale_source_id=invoice,
        # invoiceId (nullable in Dub's CommissionSchema) is the Stripe invoice id with Dub's Stripe integration, or
        # the owner's invoice id given to Dub's track-sale call: a Stripe refund of that invoice finds the sale.
        processor_payment_id=invoice,
        sale_amount_minor=_cents(item, "amount", currency) if item.get("amount") is not None else 0,
        commission_amount_minor=earnings,
        currency=currency,
        status=mapped,
        created_at=time_or_epoch(item.get("createdAt")),
        held_reason=HELD_ON_DUB if status == "hold" else "",
    )


def _net_clawbacks(builder: SourceBuilder, clawbacks: list[_Clawback]) -> None:
    """Each clawback still owed comes off the partner's owed commissions of its currency (see the module's
    docstring); the clawback row is kept as a void row of nothing, so the report counts it as skipped."""
    rows = builder.rows.commissions
    for clawback in clawbacks:
        remaining = clawback.amount_minor if clawback.status in ("pending", "approved") else 0
        candidates = [
            index
            for index, row in enumerate(rows)
            if row.partner_source_id == clawback.partner_source_id
            and row.currency == clawback.currency
            and row.status in ("pending", "approved")
            and not row.held_reason
            and row.commission_amount_minor > 0
        ]
        # Same status first, then the latest (Dub lists newest first, so by time, not by place in the file).
        candidates.sort(key=lambda index: (rows[index].status != clawback.status, -_moment(rows[index]), -index))
        remaining = amount_take(rows, candidates, remaining)
        if remaining:
            builder.refuse(
                clawback.where,
                "commission",
                f"clawback {clawback.source_id}: earnings {remaining} {clawback.currency} (minor units) more than "
                f"partner {clawback.partner_source_id} is owed in {clawback.currency}; not carried over",
            )
            continue
        rows.append(
            netted_row(
                where=clawback.where,
                source_id=clawback.source_id,
                partner_source_id=clawback.partner_source_id,
                referral_source_id=clawback.referral_source_id,
                currency=clawback.currency,
            )
        )


def _moment(row: CommissionRow) -> float:
    return row.created_at.timestamp() if row.created_at else 0.0
