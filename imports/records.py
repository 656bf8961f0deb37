"""What a platform's export says, read into plain records the engine imports. Every record names where it came from
(`where`: "<file> line <n>" for CSV, the header being line 1, or "<file> item <n>" for JSON, 1-based), so a refused
row can be named to the owner. Parsers turn a RowRefused into a Refusal and go on with the next row."""

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from core.currency import Currency, minor_unit_exponent

PAYOUT_RAILS = ("paypal", "wise", "")
REFERRAL_STATUSES = ("visitor", "lead", "customer")
COMMISSION_STATUSES = ("pending", "approved", "paid", "void")
# Groups first: a partner is placed in its group ("move") once both are here; a code is a partner's.
KINDS = ("partner", "link", "referral", "commission", "group", "move", "code")


class RowRefused(Exception):  # noqa: N818 (a row is refused, not an error of the program)
    """One row cannot be imported; `reason` says why in words the owner reads."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ImportFileError(Exception):
    """A whole file cannot be read (unknown columns, not the platform's export, not UTF-8 ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class PartnerRow:
    where: str
    source_id: str
    email: str
    name: str
    payout_email: str = ""
    payout_rail: str = ""  # "paypal" | "wise" | ""
    created_at: datetime | None = None
    # Why the old platform had the partner switched off, in the owner's words ("disabled on Rewardful", "banned on
    # Dub"); "" for an active partner. Such a partner arrives deactivated, with every imported link off.
    deactivated: str = ""
    # What the old platform showed the partner is owed and not yet paid, per currency, in minor units
    # ((currency, amount), ...), where its export says it; () when it does not. The dry run sets it beside the
    # balance the import arrives at, so an owner sees before confirming whether the money matches.
    reported_owed: tuple[tuple[str, int], ...] = ()
    # Whether that figure counts commissions still pending (in their hold), or approved ones only (FirstPromoter
    # v1's current_balance, its "payable balance"): the dry run compares it with the same here.
    reported_owed_counts_pending: bool = True
    # The source id of the partner's campaign or group on the old platform (a GroupRow's), "" for none or the
    # platform's default: the partner is placed in that group here (groups.services.partner_move).
    group_source_id: str = ""


@dataclass(frozen=True)
class LinkRow:
    where: str
    source_id: str
    partner_source_id: str
    code: str  # exactly as in the wild (?via=code ...)
    # The query parameter this link carries its code in, where the platform says per link (Tolt's link `param`:
    # ref, via, aff or a program's own); "" for the platform's usual one (Platform.link_params).
    param: str = ""


@dataclass(frozen=True)
class ReferralRow:
    where: str
    source_id: str
    partner_source_id: str
    email: str = ""
    customer_key: str = ""
    processor_customer_id: str = ""
    status: str = "lead"  # "visitor" | "lead" | "customer"
    link_code: str = ""
    created_at: datetime | None = None


@dataclass(frozen=True)
class CommissionRow:
    where: str
    source_id: str
    partner_source_id: str
    referral_source_id: str = ""
    sale_source_id: str = ""
    # The payment processor's id for the sale (a Stripe charge, invoice or payment intent id) where the platform
    # gives one: kept on the imported sale's provider_payment_id, so a Stripe refund after the move finds the sale
    # (tracking.stripe.events). "" when the platform gives none; the sale then keeps sale_source_id there.
    processor_payment_id: str = ""
    sale_amount_minor: int = 0
    commission_amount_minor: int = 0
    currency: str = "USD"  # ISO 4217, upper case
    status: str = "pending"  # "pending" | "approved" | "paid" | "void"
    created_at: datetime | None = None
    due_at: datetime | None = None
    # A pending commission the old platform held for review: imported held (the review queue), so no approval run
    # credits it until an owner releases it. "" when not held.
    held_reason: str = ""


@dataclass(frozen=True)
class GroupRow:
    """A campaign or group of the old platform, with the terms its export gives. `commission_type` "" keeps the
    program's terms (the platform's export gives none); `is_default`: the platform's default campaign or group,
    which is the program's default group here (its terms stay the program's settings)."""

    where: str
    source_id: str
    name: str
    is_default: bool = False
    commission_type: str = ""  # programs.models.CommissionType, or "" for the program's terms
    # Percent for the percent types, minor units for the fixed ones (as Program.commission_rate).
    commission_rate: Decimal | None = None
    duration_months: int = 0  # recurring types: 0 = lifetime
    hold_days: int | None = None  # None: the program's
    # The customer discount of the group's partners: "" | "percent" | "amount" (groups.models.DiscountType).
    discount_type: str = ""
    discount_percent: Decimal | None = None
    discount_amount_minor: int | None = None
    discount_currency: str = "USD"
    discount_duration: str = "once"  # groups.models.DiscountDuration
    discount_duration_months: int | None = None


@dataclass(frozen=True)
class CodeRow:
    """A partner's coupon or discount code on the old platform, as customers type it."""

    where: str
    source_id: str
    partner_source_id: str
    code: str


@dataclass(frozen=True)
class Refusal:
    where: str
    kind: str  # one of KINDS
    reason: str


@dataclass(frozen=True)
class Source:
    platform: str
    partners: list[PartnerRow] = field(default_factory=list)
    links: list[LinkRow] = field(default_factory=list)
    referrals: list[ReferralRow] = field(default_factory=list)
    commissions: list[CommissionRow] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)
    codes: list[CodeRow] = field(default_factory=list)


_NUMBER = re.compile(r"^\d+(\.\d+)?$")


def known_currency(code: str) -> str:
    """The ISO code upper-cased when the service records money in it; RowRefused otherwise."""
    upper = (code or "").strip().upper()
    if not upper:
        raise RowRefused("currency is missing")
    if upper not in Currency.values:
        raise RowRefused(f"unknown currency {code.strip()!r} (known: {', '.join(Currency.values)})")
    return upper


def minor_units(value: str | int | float | Decimal, currency: str, *, given_in: str = "major") -> int:
    """An amount in the currency's minor units: "12.34" USD -> 1234, "1000" VND -> 1000; given_in="minor" takes the
    value as minor units already ("1234" -> 1234). Refuses an unknown currency, more decimals than the currency has
    ("12.345 USD", "1000.5 VND"), and a negative, blank or non-numeric amount."""
    if given_in not in ("major", "minor"):
        raise ValueError(f"given_in must be 'major' or 'minor', not {given_in!r}")
    code = known_currency(currency)
    if isinstance(value, bool):
        raise RowRefused(f"amount {value!r} is not a number")
    if isinstance(value, float):
        text = repr(value)  # shortest text that reads back as this float: 12.34, not 12.339999...
    else:
        text = str(value).strip()
    if not text:
        raise RowRefused("amount is missing")
    if text.startswith("-"):
        raise RowRefused(f"amount {text} is negative")
    text = text.lstrip("+")
    if not _NUMBER.match(text):
        raise RowRefused(f"amount {text!r} is not a number")
    try:
        amount = Decimal(text)
    except InvalidOperation as exc:  # the pattern above makes this unreachable; kept for safety
        raise RowRefused(f"amount {text!r} is not a number") from exc
    places = 0 if given_in == "minor" else minor_unit_exponent(code)
    scaled = amount.scaleb(places)
    if scaled != scaled.to_integral_value():
        if given_in == "minor":
            raise RowRefused(f"amount {text} in minor units has decimals")
        if places == 0:
            raise RowRefused(f"amount {text} {code} has decimals ({code} has none)")
        raise RowRefused(f"amount {text} {code} has more than {places} decimals")
    return int(scaled)


def parse_time(text: str | None) -> datetime | None:
    """A moment from ISO 8601 ("2025-03-01T10:00:00Z", "2025-03-01T10:00:00+02:00", "2025-03-01") or the platforms'
    "YYYY-MM-DD HH:MM:SS" (UTC); None for a blank. A time without an offset is UTC. RowRefused for anything else."""
    if text is None:
        return None
    raw = str(text).strip()
    if not raw:
        return None
    candidate = raw
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    if candidate.upper().endswith(" UTC"):
        candidate = candidate[:-4]
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError as exc:
        raise RowRefused(f"time {raw!r} is not a date and time (ISO 8601 or YYYY-MM-DD HH:MM:SS)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
