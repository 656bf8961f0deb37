"""PartnerStack: the v2 vendor API's lists saved as JSON, one file a page: GET /api/v2/partnerships, /api/v2/customers,
/api/v2/rewards and, optionally, /api/v2/transactions (the {"data": {"has_more", "items": [...]}, "message", "status"}
answer or its list).

Links in the wild: PartnerStack's links reach the site with ?ps_partner_key=<partner key, Base64>&ps_xid=<click id>
(the S2S guide), or in the older form ?gspk=<partner key, Base64>&gsxid=<click id>. Each partner's code here is the
partner key itself (what both parameters carry once decoded, and what Stripe metadata "partner_key" holds); the
ps_partner_key and gspk aliases decode the Base64 before they look the code up.

Fields read, and where each is documented (D = docs.partnerstack.com, S = support.partnerstack.com; "Dub" =
dubinc/dub apps/web/lib/partnerstack/schemas.ts, a peer importer's schema, where PartnerStack's own page was not found):
  envelope   data.items, data.has_more; times in epoch ms           D /docs/partner-api
  partnership key, email, first_name, last_name, created_at         Dub partnerStackPartner; D /docs/partner-api (ms)
             partner_key                                            D /reference/post_partnerships-1 (the key itself;
                                                                    its presence in the list answer is not confirmed)
  customer   key, partnership_key, customer_key, created_at         D /reference (List customers example, via
                                                                    withone.ai's copy); Dub partnerStackCustomer
             email, name, provider_key (nullable), test             Dub partnerStackCustomer ("True if created by a
                                                                    test"); D /reference: test customers earn no rewards
  transaction key, amount (cents), currency, amount_usd (cents),    D /reference/post_v2-transactions (amount in cents
             test                                                   of currency; test); List transactions example
                                                                    (amount_usd) via withone.ai's copy
  reward     key, amount (cents, USD), currency, created_at,        Dub partnerStackCommission ("amount of the reward
             reward_status, customer {email, external_key},         in cents (USD)"); statuses: S "Reviewing partner
             transaction {amount, currency}, partnership {email}    rewards" (360009840773)

Rewards are paid in USD whatever the charge's currency: a reward keeps its own currency, and its sale is recorded in
that currency (the charge's amount when the charge is in it, else the charge's amount_usd when the reward is in USD,
else the reward's amount). Reward status: pending -> pending, hold -> pending held for review (PartnerStack holds a
reward for suspicious activity or a longer review: it arrives in the review queue, never credited by an approval run),
approved and scheduled -> approved (owed, not yet paid), paid -> paid, declined -> void. Test customers (test: true)
and rewards of test customers or test transactions are skipped: nothing is owed on them. Both are decided before the
reward's currency or amount is read: a declined or test reward is skipped whatever its currency or amount says.

Groups (GET /api/v2/groups, optional: key, name, slug, default; Dub partnerStackGroup and its api.ts listGroups)
arrive as groups with the program's terms, the default one as the program's default group; each partnership is placed
in the group its group.slug names (Dub partnerStackPartner). Without the groups file, a partnership's group object is
all there is of it (named by its slug). PartnerStack has no coupon codes in these answers.

An archived partnership (archived: true, listed with ?include_archived=true; is_archived in the partner API's copy of
the list) arrives deactivated, "archived on PartnerStack". No balance or amount owed is documented on a partnership
(Dub's partnerStackPartner, Airbyte's partnerships schema and the List Partnerships example carry none): reported_owed
stays ()."""

from collections.abc import Collection

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
    text,
    time_or_epoch,
    unknown_file,
)
from imports.records import (
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

PLATFORM = "partnerstack"
HELD_REASON = "held for review on PartnerStack (reward_status hold)"
ARCHIVED = "archived on PartnerStack"
REWARD_STATUSES = {
    "hold": "pending",
    "pending": "pending",
    "approved": "approved",
    "scheduled": "approved",
    "paid": "paid",
    "declined": "void",
}
EXPECTED = (
    "PartnerStack's partnerships, customers, rewards, transactions or groups JSON "
    "(GET /api/v2/partnerships, /customers, /rewards, /transactions, /groups)"
)


def read(files: Files) -> Source:
    builder = SourceBuilder(PLATFORM)
    parsed: list[tuple[str, str, list[Item]]] = []
    for name, content in files:
        if not looks_like_json(content):
            raise ImportFileError(f"{name}: PartnerStack files are the API's JSON answers; expected {EXPECTED}")
        items = json_items(name, content)
        parsed.append((name, _kind(name, items), items))
    transactions = {
        text(item.get("key")): item for _, kind, items in parsed if kind == "transactions" for item in items
    }
    # A reward may name its customer only by the owner's customer_key or email: its key from the customers file.
    customer_keys: dict[str, str] = {}
    test_customers: set[str] = set()
    for _, kind, items in parsed:
        if kind == "customers":
            for item in items:
                if item.get("test") is True:
                    test_customers.add(text(item.get("key")))
                for alias in (text(item.get("key")), text(item.get("customer_key")), text(item.get("email")).lower()):
                    if alias:
                        customer_keys.setdefault(alias, text(item.get("key")))
    partner_by_email = {
        text(item.get("email")).lower(): text(item.get("key"))
        for _, kind, items in parsed
        if kind == "partnerships"
        for item in items
        if text(item.get("email"))
    }
    groups_file = any(kind == "groups" for _, kind, _ in parsed)
    for name, kind, items in parsed:
        if kind == "partnerships":
            builder.saw_partner_file = True
        if kind == "groups":
            builder.saw_group_file = True
        for where, item in items_with_where(name, items):
            if kind == "partnerships":
                builder.attempt(where, "partner", _partnership, where, item, partner_id=text(item.get("key")))
                builder.attempt(where, "link", _link, where, item)
                group = obj(item.get("group"))
                if group and not groups_file:
                    # Without GET /groups, the partnership's group {slug} is all the export says of it.
                    builder.attempt(where, "group", _group, where, group, partner_id=text(group.get("slug")))
            elif kind == "groups":
                builder.attempt(
                    where, "group", _group, where, item, partner_id=first(item.get("slug"), item.get("key"))
                )
            elif kind == "customers":
                builder.attempt(where, "referral", _customer, where, item)
            elif kind == "rewards":
                builder.attempt(
                    where,
                    "commission",
                    _reward,
                    where,
                    item,
                    transactions,
                    partner_by_email,
                    customer_keys,
                    test_customers,
                )
    return builder.finish()


def _kind(name: str, items: list[Item]) -> str:
    if not items:
        return "empty"
    sample = items[0]
    if "reward_status" in sample:
        return "rewards"
    # A transaction names its partnership_key and customer too: told from a customer by its amount.
    if "amount" in sample and ("customer_key" in sample or "customer" in sample):
        return "transactions"
    if "partnership_key" in sample and ("provider_key" in sample or "customer_key" in sample or "email" in sample):
        return "customers"
    if "slug" in sample and "email" not in sample:
        return "groups"
    if "email" in sample and "key" in sample:
        return "partnerships"
    raise unknown_file(name, EXPECTED)


def _partnership(where: str, item: Item) -> PartnerRow:
    return PartnerRow(
        where=where,
        source_id=required(item.get("key"), "partnership key"),
        email=email_of(item.get("email"), required=True),
        name=name_of(item.get("first_name"), item.get("last_name")),
        created_at=time_or_epoch(item.get("created_at")),
        deactivated=ARCHIVED if item.get("archived") is True or item.get("is_archived") is True else "",
        group_source_id=text(dig(item, "group", "slug")),
    )


def _group(where: str, item: Item) -> GroupRow:
    """A group (GET /api/v2/groups: key, name, slug, default; a partnership names its group by slug) as a group
    here, with the program's terms: PartnerStack's rewards are set per group in its own settings, not in these
    answers. The default group is the program's default group."""
    slug = required(first(item.get("slug"), item.get("key")), "group slug")
    return GroupRow(
        where=where,
        source_id=slug,
        name=group_name_of(item.get("name"), slug),
        is_default=item.get("default") is True,
    )


def _link(where: str, item: Item) -> LinkRow:
    partner_key = first(item.get("partner_key"), item.get("key"))
    if not partner_key:
        raise RowRefused("partner key is missing")
    return LinkRow(
        where=where,
        source_id=f"gspk:{partner_key}",
        partner_source_id=required(item.get("key"), "partnership key"),
        code=code_of(partner_key),
    )


def _customer(where: str, item: Item) -> ReferralRow:
    if item.get("test") is True:
        # A test customer (PartnerStack's test keys or test partner): not a real referral. Read as a visitor, which the
        # import skips and counts as skipped.
        return ReferralRow(
            where=where,
            source_id=required(item.get("key"), "customer key"),
            partner_source_id=text(item.get("partnership_key")),
            status="visitor",
        )
    provider_key = text(item.get("provider_key"))
    own_key = text(item.get("customer_key"))
    email = email_of(item.get("email"), required=False)
    if not email and not own_key and not provider_key:
        raise RowRefused("no customer: neither an email, a customer_key nor a provider_key")
    return ReferralRow(
        where=where,
        source_id=required(item.get("key"), "customer key"),
        partner_source_id=required(item.get("partnership_key"), "partnership_key"),
        email=email,
        customer_key=own_key,
        # provider_key is the payment provider's id for the customer: a Stripe customer id with Stripe billing.
        processor_customer_id=provider_key if provider_key.startswith("cus_") else "",
        status="customer" if provider_key or text(item.get("status")).lower() == "customer" else "lead",
        created_at=time_or_epoch(item.get("created_at")),
    )


def _reward(
    where: str,
    item: Item,
    transactions: dict[str, Item],
    partner_by_email: dict[str, str],
    customer_keys: dict[str, str],
    test_customers: Collection[str] = (),
) -> CommissionRow:
    status = text(item.get("reward_status") or item.get("status")).lower()
    if status not in REWARD_STATUSES:
        raise RowRefused(f"reward status {status!r} is not hold, pending, approved, scheduled, paid or declined")
    transaction = obj(item.get("transaction"))
    transaction_key = first(transaction.get("key"), item.get("transaction_key"))
    if not transaction and transaction_key in transactions:
        transaction = transactions[transaction_key]
    full_transaction = transactions.get(transaction_key, {}) if transaction_key else {}
    customer_key = first(
        dig(item, "customer", "key"),
        customer_keys.get(text(dig(item, "customer", "external_key")), ""),
        customer_keys.get(text(dig(item, "customer", "email")).lower(), ""),
        item.get("customer_key"),
    )
    mapped = REWARD_STATUSES[status]
    if customer_key in test_customers or transaction.get("test") is True or full_transaction.get("test") is True:
        mapped = "void"  # a test customer's or test transaction's reward: nothing owed
    partner = first(
        dig(item, "partnership", "key"),
        item.get("partnership_key"),
        partner_by_email.get(text(dig(item, "partnership", "email")).lower(), ""),
    )
    source_id = required(item.get("key"), "reward key")
    if mapped == "void":
        # Not owed on PartnerStack: skipped, whatever its currency or amount says.
        return CommissionRow(
            where=where,
            source_id=source_id,
            partner_source_id=required(partner, "partnership"),
            referral_source_id=customer_key,
            sale_source_id=transaction_key,
            currency=text(item.get("currency")).upper(),
            status="void",
        )
    currency = known_currency(text(item.get("currency")))
    amount = item.get("amount")
    if amount is None or text(amount) == "":
        raise RowRefused("amount is missing")
    sale_minor = 0
    if transaction:
        sale_currency = text(transaction.get("currency")).upper() or currency
        if sale_currency == currency:
            sale_minor = money(first(transaction.get("amount"), 0), currency, given_in="minor")
        elif currency == "USD":
            # Rewards are paid in USD whatever the charge's currency: the sale in USD when the charge says it.
            usd = first(transaction.get("amount_usd"), full_transaction.get("amount_usd"))
            sale_minor = money(usd, currency, given_in="minor") if usd else 0
    return CommissionRow(
        where=where,
        source_id=source_id,
        partner_source_id=required(partner, "partnership"),
        referral_source_id=customer_key,
        sale_source_id=transaction_key,
        sale_amount_minor=sale_minor,
        commission_amount_minor=money(amount, currency, given_in="minor"),
        currency=currency,
        status=mapped,
        created_at=time_or_epoch(item.get("created_at")),
        held_reason=HELD_REASON if status == "hold" and mapped == "pending" else "",
    )
