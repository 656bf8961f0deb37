"""Tolt: the API's list answers saved as JSON, one file per page (docs/import.md, Tolt, has the curl lines), from v1
(GET /v1/partners?expand[]=program, /v1/links?expand[]=partner, /v1/customers, /v1/transactions and
/v1/commissions?expand[]=partner&expand[]=program) or v2 (GET /v2/programs, /v2/partners, /v2/links, /v2/customers,
/v2/transactions, /v2/commissions); one import may mix them (v2 keeps v1's resources and ids). Only v1's partner
carries payout_method and payout_details; v2's has neither.

Every field read, and the docs.tolt.com page that documents it (tests/imports/fixtures/tolt/README.md has the table):

- Envelopes: v1 {"success", "has_more", "total_count", "data": [...]} (partners/list, links/list, transactions/list,
  commissions/list); v1 customers/list nests its list one level deeper, {"data": {"data": [...]}}; v2
  {"success", "message", "data": [...], "has_more", "next_cursor", "prev_cursor"} for every list. A bare list, and a
  list of saved answers (pages joined with `jq -s`), are read too.
- Program (v2 programs/list; v1 only expanded): id, currency_code.
- Partner (partners/list, partners/retrieve): id, email, first_name, last_name, company_name, created_at, status
  ("active", "pending", "suspended", "rejected"; v2 also suspended_at, rejected_at) and suspension_reason;
  v1 only: payout_method ("paypal", "wise", "crypto", "bank_transfer", "wire", "none") and payout_details.email, the
  payout email of PayPal and Wise; program.currency_code with expand[]=program.
- Link (links/list): id, param (the link's own query parameter: "ref", "via", "aff" or the program's own), value
  (the code in ?<param>=<value>), partner_id (or partner.id with expand[]=partner).
- Customer (customers/list): id, email, customer_id (your id for the customer: a Stripe customer id when it starts
  with cus_), v2 identifier (what tolt.js signup was given), partner_id, status ("lead", "trialing", "active",
  "canceled"; v2 also "suspended"), v2 active_at (set once the customer paid), created_at.
- Transaction (transactions/list, transactions/create): id, amount (cents), currency, charge_id: they fill in a
  commission's revenue, currency and charge when the commission leaves them null.
- Commission (commissions/list, /create, /update): id, amount (cents, a number or a string such as "1999"; v2 always
  a string), revenue (cents, nullable), currency (null when not set: the program's currency_code applies, by
  program_id from the programs file), program_id, customer_id, partner_id (or partner.id), transaction_id, charge_id
  (nullable), status ("pending", "approved", "paid", "rejected", "refunded"), type ("reward"; "refund" for a refund,
  which Tolt records with a negative amount), created_at, scheduled_approval_date.

- Group (v2 groups/list, the SDK's Group; v1 a partner's `group` with expand[]=group): id, name, is_default; a
  partner's group_id. Each group arrives as a group with the program's terms (Tolt's commissions are its flows'),
  the default one as the program's default group; each partner is placed in their group.
- Promotion code (promotion-codes/list, the SDK's PromotionCode): id, code, partner_id, active: the partner's coupon
  code (one not active is left).

Money is in cents (the lowest denomination of the currency). Status: pending -> pending, approved -> approved,
paid -> paid, rejected, declined (v2's decline action) and refunded -> void, decided before the currency or the
amount is read: a void row is skipped even in a currency this service does not keep or with an unreadable amount.
A commission of amount 0 (v2 zeroes an unpaid commission whose transaction is refunded) owes nothing: void.

A partner whose status is not "active" was switched off on Tolt and arrives deactivated ("suspended on Tolt",
"rejected on Tolt", "pending approval on Tolt"). Neither version gives what a partner is owed (no balance field), so
reported_owed stays ().

A refund commission is netted here, so each partner's balance is Tolt's: its amount comes off the commissions of the
same partner, currency and status, the refunded sale's own commission first (same charge_id or transaction_id), then
the partner's latest. A commission netted to nothing becomes void; the refund row itself is then skipped (void, 0).
A refund of a sale whose commission is void already (rejected or refunded) takes nothing more. What an approved or
pending refund cannot take, because the partner has less than that in commissions of its status, is refused by name
(the balance here is then that much higher than Tolt's); a refund already settled in a payout (paid) nets against
paid commissions only and changes no balance.

Sales keep Tolt's charge_id (a Stripe charge id when Tolt's Stripe app recorded it), else the transaction_id."""

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from imports.platforms.base import (
    Files,
    Item,
    SourceBuilder,
    amount_take,
    code_of,
    decode,
    dig,
    email_of,
    first,
    group_name_of,
    items_with_where,
    json_items,
    looks_like_json,
    money,
    name_of,
    netted_row,
    obj,
    required,
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

PLATFORM = "tolt"
COMMISSION_STATUSES = {
    "pending": "pending",
    "approved": "approved",
    "paid": "paid",
    "rejected": "void",
    # v2's decline action ("Marks a commission declined so it is left out of payouts").
    "declined": "void",
    "refunded": "void",
}
# Tolt's customer statuses (customers/list): a paying ("active") customer, one who paid and left ("canceled") or
# whose subscription is suspended (v2), is a customer; "lead" and "trialing" are leads. The other spellings are kept
# from earlier exports.
CUSTOMER_STATUSES = {"active", "customer", "paying", "cancelled", "canceled", "churned", "refunded", "suspended"}
# A partner status other than "active" (partners/update: "active", "pending", "suspended", "rejected"; v1's list
# page also names "inactive"): the partner was not switched on at Tolt, in Tolt's word.
PARTNER_OFF = {"pending": "pending approval on Tolt"}
PAYOUT_RAILS = {"paypal": "paypal", "wise": "wise"}
EXPECTED = (
    "Tolt's programs, partners, links, customers, transactions or commissions JSON "
    "(GET /v1 or /v2: /programs, /partners, /links, /customers, /transactions, /commissions)"
)


@dataclass(frozen=True)
class _Refund:
    where: str
    source_id: str
    partner_source_id: str
    referral_source_id: str
    sales: frozenset[str]
    amount_minor: int
    currency: str
    status: str


def read(files: Files) -> Source:
    builder = SourceBuilder(PLATFORM)
    parsed: list[tuple[str, str, list[Item]]] = []
    for name, content in files:
        if not looks_like_json(content):
            raise ImportFileError(f"{name}: Tolt files are the API's JSON answers; expected {EXPECTED}")
        items = _items(name, content)
        parsed.append((name, _kind(name, items), items))
    # Each program's currency (v2's programs file, v1's expanded programs), for commissions whose currency is null;
    # the first one seen for a commission that names no program.
    programs: dict[str, str] = {}
    for _, kind, items in parsed:
        for item in items:
            program = item if kind == "programs" else obj(item.get("program"))
            if text(program.get("currency_code")):
                programs.setdefault(text(program.get("id")), text(program.get("currency_code")))
    program_currency = next(iter(programs.values()), "")
    # A commission listed without its partner names its customer only: the customer's partner earned it.
    customer_partner = {
        text(item.get("id")): _partner_id(item) for _, kind, items in parsed if kind == "customers" for item in items
    }
    transactions = {text(item.get("id")): item for _, kind, items in parsed if kind == "transactions" for item in items}
    refunds: list[_Refund] = []
    sales_of: dict[str, frozenset[str]] = {}
    for name, kind, items in parsed:
        if kind == "partners":
            builder.saw_partner_file = True
        if kind == "groups":
            builder.saw_group_file = True
        for where, item in items_with_where(name, items):
            if kind == "partners":
                builder.attempt(where, "partner", _partner, where, item, partner_id=text(item.get("id")))
                if obj(item.get("group")):
                    group = item["group"]
                    builder.attempt(where, "group", _group, where, group, partner_id=text(group.get("id")))
            elif kind == "groups":
                builder.attempt(where, "group", _group, where, item, partner_id=text(item.get("id")))
            elif kind == "promotion_codes":
                builder.attempt(where, "code", _promotion_code, where, item)
            elif kind == "links":
                builder.attempt(where, "link", _link, where, item)
            elif kind == "customers":
                builder.attempt(where, "referral", _customer, where, item)
            elif kind == "commissions":
                context = (program_currency, programs, customer_partner, transactions)
                builder.attempt(where, "commission", _commission, where, item, context, refunds, sales_of)
    _net_refunds(builder, refunds, sales_of)
    return builder.finish()


def _items(name: str, content: bytes) -> list[Item]:
    """The objects of one saved answer, or of a list of saved answers (pages joined)."""
    try:
        payload = json.loads(decode(name, content))
    except (ValueError, RecursionError):
        return json_items(name, content)  # names the error as for every platform
    pages = payload if isinstance(payload, list) and payload and all(map(_is_answer, payload)) else [payload]
    items: list[Any] = []
    for page in pages:
        found = _page_items(page)
        if found is None:
            raise ImportFileError(
                f'{name}: expected Tolt\'s list answer {{"success": true, "data": [...]}} '
                f'(customers: {{"data": {{"data": [...]}}}}), or a JSON list of objects'
            )
        items.extend(found)
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise ImportFileError(f"{name}: item {number} is not an object")
    return items


def _is_answer(value: Any) -> bool:
    return isinstance(value, dict) and "data" in value and ("success" in value or "has_more" in value)


def _page_items(page: Any) -> list[Any] | None:
    if isinstance(page, list):
        return page
    if not isinstance(page, dict):
        return None
    data = page.get("data")
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return list(data["data"])  # customers/list: {"data": {"data": [...]}}
    return None


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    identifier = text(sample.get("id"))
    if identifier.startswith("grp_") or "is_default" in sample and "email" not in sample:
        return "groups"
    if identifier.startswith("prg_") or ("currency_code" in sample and "email" not in sample):
        return "programs"
    if identifier.startswith("txn_") or "billing_type" in sample:
        return "transactions"
    if "revenue" in sample or identifier.startswith("comm_") or "transaction_id" in sample:
        return "commissions"
    if "param" in sample and "value" in sample or identifier.startswith("lnk_"):
        return "links"
    if "customer_id" in sample or identifier.startswith("cust_") or identifier.startswith("cus_"):
        return "customers"
    if "email" in sample and ("first_name" in sample or identifier.startswith("part_")):
        return "partners"
    if identifier.startswith("prc_") or "code" in sample and "partner_id" in sample:
        return "promotion_codes"
    raise unknown_file(name, EXPECTED)


def _partner_id(item: Item) -> str:
    return first(dig(item, "partner", "id"), item.get("partner_id"))


def _partner(where: str, item: Item) -> PartnerRow:
    method = text(item.get("payout_method")).lower()
    payout_email = email_of(dig(item, "payout_details", "email"), required=False)
    status = text(item.get("status")).lower()
    if not status:
        # v2 stamps the moment a partner was suspended or rejected.
        status = "suspended" if text(item.get("suspended_at")) else "rejected" if text(item.get("rejected_at")) else ""
    deactivated = "" if status in ("", "active") else PARTNER_OFF.get(status, f"{status} on Tolt")
    if deactivated and text(item.get("suspension_reason")):
        deactivated += f" ({text(item.get('suspension_reason'))})"
    return PartnerRow(
        where=where,
        source_id=required(item.get("id"), "partner id"),
        email=email_of(item.get("email"), required=True),
        name=name_of(item.get("first_name"), item.get("last_name")) or text(item.get("company_name")),
        payout_email=payout_email,
        payout_rail=PAYOUT_RAILS.get(method, "") if payout_email else "",
        created_at=time_or_epoch(item.get("created_at")),
        deactivated=deactivated,
        # The partner's group: its object with expand[]=group; a bare group_id without it names no group the
        # import knows (SourceBuilder drops it: the partner stays in the default group).
        group_source_id=first(dig(item, "group", "id"), item.get("group_id")),
    )


def _group(where: str, group: Item) -> GroupRow:
    """A group (v2 GET /v2/groups, or a partner's with v1 expand[]=group) as a group here, with the program's
    terms: Tolt's commissions live on the group's flows, not on the group. The default group (is_default) is the
    program's default group."""
    source_id = required(group.get("id"), "group id")
    return GroupRow(
        where=where,
        source_id=source_id,
        name=group_name_of(group.get("name"), f"Tolt group {source_id}"),
        is_default=group.get("is_default") is True,
    )


def _promotion_code(where: str, item: Item) -> CodeRow | None:
    """A promotion code (GET /v1 or /v2/promotion-codes): the partner's coupon code. One switched off (active
    false) is not brought over. Its own discount (type, value) is the billing system's coupon; the group's
    discount here is the owner's to set."""
    if item.get("active") is False:
        return None
    code = code_of(item.get("code"))
    return CodeRow(
        where=where,
        source_id=first(item.get("id"), code),
        partner_source_id=required(_partner_id(item), "partner"),
        code=code,
    )


def _link(where: str, item: Item) -> LinkRow:
    code = code_of(item.get("value"))
    return LinkRow(
        where=where,
        source_id=first(item.get("id"), code),
        partner_source_id=required(_partner_id(item), "partner"),
        code=code,
        param=text(item.get("param")).lower(),
    )


def _customer(where: str, item: Item) -> ReferralRow:
    own_id = first(item.get("customer_id"), item.get("identifier"))
    email = email_of(item.get("email"), required=False)
    if not email and not own_id:
        raise RowRefused("no customer: neither an email nor a customer_id")
    status = text(item.get("status")).lower()
    paid = status in CUSTOMER_STATUSES or bool(text(item.get("active_at")))
    return ReferralRow(
        where=where,
        source_id=required(item.get("id"), "customer id"),
        partner_source_id=required(_partner_id(item), "partner"),
        email=email,
        # Tolt's customer_id is the owner's id for the customer, a Stripe customer id when billing is Stripe.
        customer_key="" if own_id.startswith("cus_") else own_id,
        processor_customer_id=own_id if own_id.startswith("cus_") else "",
        status="customer" if paid else "lead",
        link_code=first(dig(item, "link", "value")),
        created_at=time_or_epoch(item.get("created_at")),
    )


Context = tuple[str, dict[str, str], dict[str, str], dict[str, Item]]


def _commission(
    where: str, item: Item, context: Context, refunds: list[_Refund], sales_of: dict[str, frozenset[str]]
) -> CommissionRow | None:
    program_currency, programs, customer_partner, transactions = context
    status = text(item.get("status")).lower()
    if status not in COMMISSION_STATUSES:
        raise RowRefused(f"status {status!r} is not pending, approved, paid, rejected, declined or refunded")
    transaction_id = text(item.get("transaction_id"))
    transaction = obj(transactions.get(transaction_id)) if transaction_id else {}
    customer = first(dig(item, "customer", "id"), item.get("customer_id"))
    source_id = required(item.get("id"), "commission id")
    partner = required(_partner_id(item) or customer_partner.get(customer, ""), "partner")
    charge_id = first(item.get("charge_id"), transaction.get("charge_id"))
    sales = frozenset(key for key in (charge_id, transaction_id) if key)
    code = first(
        item.get("currency"),
        transaction.get("currency"),
        dig(item, "program", "currency_code"),
        programs.get(text(item.get("program_id")), ""),
        program_currency,
    )
    if COMMISSION_STATUSES[status] == "void":
        # Not owed on Tolt: skipped, whatever its currency or amount says.
        sales_of[source_id] = sales
        return CommissionRow(
            where=where,
            source_id=source_id,
            partner_source_id=partner,
            referral_source_id=customer,
            sale_source_id=first(charge_id, transaction_id),
            currency=code.upper(),
            status="void",
            created_at=_time_or_none(item.get("created_at")),
        )
    currency = known_currency(code)
    amount = item.get("amount")
    if amount is None or text(amount) == "":
        raise RowRefused("amount is missing")
    if isinstance(amount, dict | list):
        raise RowRefused("amount is not a number")
    refund = text(item.get("type")).lower() == "refund" or text(amount).startswith("-")
    amount_minor = money(text(amount).removeprefix("-") if refund else amount, currency, given_in="minor")
    if refund:
        refunds.append(
            _Refund(
                where=where,
                source_id=source_id,
                partner_source_id=partner,
                referral_source_id=customer,
                sales=sales,
                amount_minor=amount_minor,
                currency=currency,
                status=COMMISSION_STATUSES[status],
            )
        )
        return None
    sales_of[source_id] = sales
    revenue = item.get("revenue")
    if revenue is None or text(revenue) == "":
        revenue = transaction.get("amount")
    return CommissionRow(
        where=where,
        source_id=source_id,
        partner_source_id=partner,
        referral_source_id=customer,
        # The charge (a Stripe charge id with Tolt's Stripe app), so a refund after the move finds the sale.
        sale_source_id=first(charge_id, transaction_id),
        processor_payment_id=charge_id,
        sale_amount_minor=money(first(revenue, 0), currency, given_in="minor"),
        commission_amount_minor=amount_minor,
        currency=currency,
        # An amount of 0 owes nothing (v2 zeroes an unpaid commission whose transaction was refunded).
        status=COMMISSION_STATUSES[status] if amount_minor else "void",
        created_at=time_or_epoch(item.get("created_at")),
        due_at=time_or_epoch(item.get("scheduled_approval_date")),
    )


def _time_or_none(value: Any) -> datetime | None:
    """A skipped row's time, or None when it cannot be read: nothing of a skipped row is refused."""
    try:
        return time_or_epoch(value)
    except RowRefused:
        return None


def _net_refunds(builder: SourceBuilder, refunds: list[_Refund], sales_of: dict[str, frozenset[str]]) -> None:
    """Each refund comes off the commissions it refunds (see the module's docstring); the refund row is kept as a
    void row of nothing, so the report counts it as skipped."""
    rows = builder.rows.commissions
    for refund in refunds:
        own = [
            index
            for index, row in enumerate(rows)
            if row.partner_source_id == refund.partner_source_id
            and sales_of.get(row.source_id, frozenset()) & refund.sales
        ]
        already_void = any(rows[index].status == "void" for index in own)
        remaining = 0 if already_void or refund.status == "void" else refund.amount_minor
        candidates = [
            index
            for index, row in enumerate(rows)
            if row.partner_source_id == refund.partner_source_id
            and row.currency == refund.currency
            and row.status == refund.status
            and row.commission_amount_minor > 0
        ]
        candidates.sort(key=lambda index: (index not in own, -index))
        remaining = amount_take(rows, candidates, remaining)
        if remaining and refund.status != "paid":
            builder.refuse(
                refund.where,
                "commission",
                f"refund {refund.source_id}: {remaining} {refund.currency} (minor units) more than partner "
                f"{refund.partner_source_id} has in {refund.status} commissions; not carried over",
            )
            continue
        rows.append(
            netted_row(
                where=refund.where,
                source_id=refund.source_id,
                partner_source_id=refund.partner_source_id,
                referral_source_id=refund.referral_source_id,
                currency=refund.currency,
            )
        )
