"""What a commission still pays, defined once, and the reads every page, API and admin list builds on it.

From the spec's commission states:
- pending (in its hold), approved, paid: the amount less what refunds clawed back (nothing for pending);
- refunded after it was credited (approved or paid, then partly refunded): the amount less the proportional
  deduction;
- refunded while pending: nothing, as a pending commission partly refunded is cancelled whole and never
  credited (its deducted share is informational only);
- reversed (the whole sale refunded): nothing.

"Clawed back" is what refunds took from the partner's balance: the deducted share of a credited commission,
and nothing for one that was never credited."""

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypedDict

from django.db.models import BigIntegerField, Case, F, Q, QuerySet, Sum, Value, When

from core.money import money
from programs.models import Partner, PartnerProgram, Program

from .models import Commission, CommissionReview, CommissionStatus, LedgerEntry, NotificationOutbox, Withdrawal


class CommissionMoney(TypedDict):
    """The annotations commissions_with_money adds."""

    payable_cents: int
    clawed_back_cents: int


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    CommissionWithMoney = WithAnnotations[Commission, CommissionMoney]


# What a list of commissions reads with each row: its partner, its sale, and a bonus's award with its bonus (a bonus
# has no sale: commission_sale_words names the bonus instead).
ROW_RELATED = ("partner", "sale", "bonus_award__bonus")
BONUS_WORDS = "Bonus: {name}"


def commission_sale_words(commission: Commission) -> str:
    """What a page shows of a commission where its sale would be: the sale's amount, or "Bonus: <name>" for a
    milestone bonus (groups.models.BonusAward; its rows read ROW_RELATED)."""
    if commission.sale is not None:
        return money(commission.sale.amount_cents, commission.sale.currency)
    award = getattr(commission, "bonus_award", None)
    return BONUS_WORDS.format(name=award.bonus.name if award is not None else "")


def cancelled_by_refund(prefix: str = "") -> Q:
    """A pending commission partly refunded is cancelled whole: the refund leaves it `refunded` and never
    credited (approval only takes pending ones), so it pays nothing and nothing was clawed back."""
    return Q(**{f"{prefix}status": CommissionStatus.REFUNDED, f"{prefix}credited": False})


def payable_cents(prefix: str = "") -> Case:
    """SQL expression: what the commission still pays, in its currency. `prefix` reaches it through a
    relation ("commission__" from a sale); a row without a commission gives NULL, which sums ignore."""
    return Case(
        When(**{f"{prefix}status": CommissionStatus.REVERSED}, then=Value(0)),
        When(cancelled_by_refund(prefix), then=Value(0)),
        default=F(f"{prefix}amount_cents") - F(f"{prefix}deducted_cents"),
        output_field=BigIntegerField(),
    )


def clawed_back_cents(prefix: str = "") -> Case:
    """SQL expression: what refunds took back from the partner's balance for this commission."""
    return Case(
        When(**{f"{prefix}credited": True}, then=F(f"{prefix}deducted_cents")),
        default=Value(0),
        output_field=BigIntegerField(),
    )


def commissions_with_money(
    queryset: QuerySet[Commission] | None = None,
) -> "QuerySet[CommissionWithMoney]":
    """The commissions annotated with `payable_cents` and `clawed_back_cents`."""
    queryset = Commission.objects.all() if queryset is None else queryset
    return queryset.annotate(payable_cents=payable_cents(), clawed_back_cents=clawed_back_cents())


def commission_payable_by_partner(*, program_id: int, partner_ids: Iterable[int]) -> dict[int, int]:
    """What the program's commissions still pay each of these partners, summed as stored whatever the
    currency (as the performance report sums). One grouped query; partners without commissions are absent."""
    rows = (
        Commission.objects.filter(program_id=program_id, partner_id__in=list(partner_ids))
        .order_by()
        .values("partner_id")
        .annotate(total=Sum(payable_cents()))
    )
    return {row["partner_id"]: row["total"] or 0 for row in rows}


def ledger_balances(
    *, partner_ids: Iterable[int], programs: QuerySet[Program] | None = None
) -> dict[int, dict[str, int]]:
    """Each partner's ledger balance per currency (the sum of its entries), in one grouped query.
    With `programs` only the entries of those programs count: credits and refund
    clawbacks; payouts and manual adjustments carry no program and are left out. Partners without entries are
    absent."""
    entries = LedgerEntry.objects.filter(partner_id__in=list(partner_ids))
    if programs is not None:
        entries = entries.filter(program__in=programs)
    rows = entries.order_by().values("partner_id", "currency").annotate(total=Sum("amount_cents"))
    balances: dict[int, dict[str, int]] = {}
    for row in rows:
        balances.setdefault(row["partner_id"], {})[row["currency"]] = row["total"] or 0
    return balances


def ledger_kind_totals(*, partner_ids: Iterable[int]) -> dict[int, dict[str, dict[str, int]]]:
    """Each partner's ledger entries summed per currency and kind (LedgerEntry.Kind: credits, refund deductions,
    payouts, adjustments), signed as stored, in one grouped query: the parts ledger_balances adds up. Partners
    without entries are absent."""
    rows = (
        LedgerEntry.objects.filter(partner_id__in=list(partner_ids))
        .order_by()
        .values("partner_id", "currency", "kind")
        .annotate(total=Sum("amount_cents"))
    )
    totals: dict[int, dict[str, dict[str, int]]] = {}
    for row in rows:
        totals.setdefault(row["partner_id"], {}).setdefault(row["currency"], {})[row["kind"]] = row["total"] or 0
    return totals


def open_withdrawals_by_partner(*, partner_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """What each partner's open withdrawals ask for, per currency, in one grouped query."""
    rows = (
        Withdrawal.objects.filter(partner_id__in=list(partner_ids), status=Withdrawal.Status.OPEN)
        .order_by()
        .values("partner_id", "currency")
        .annotate(total=Sum("amount_cents"))
    )
    totals: dict[int, dict[str, int]] = {}
    for row in rows:
        totals.setdefault(row["partner_id"], {})[row["currency"]] = row["total"] or 0
    return totals


def commission_refund_steps(*, commission_id: int) -> QuerySet[NotificationOutbox]:
    """The refunds applied to a commission, one row per refund in order: each refund writes one (the
    notifications' outbox, kept after delivery) with its step number, reason and whether it reversed the
    commission or hit one already paid out."""
    return NotificationOutbox.objects.filter(commission_id=commission_id).order_by("refund_step")


def commission_ledger(*, commission_id: int) -> QuerySet[LedgerEntry]:
    """The ledger entries of a commission (its credit and refund clawbacks), oldest first."""
    return LedgerEntry.objects.filter(commission_id=commission_id).order_by("created_at", "pk")


# --- The review tab (fraud rules) ----------------------------------------------------------------------------

# The held commissions' rule filter value for an owner's hold (hold_rule "").
OWNER_HOLD = "owner"
# Partners offered in a review filter (a program with more is filtered by the first ones by name).
REVIEW_PARTNERS_CAP = 500


def held_commissions_list(
    *, program_id: int, rule: str | None = None, partner_id: int | None = None
) -> QuerySet[Commission]:
    """The program's held commissions, newest first (the commission_program_held index), with partner and sale.
    `rule`: the rule that held them, OWNER_HOLD for an owner's hold."""
    rows = Commission.objects.filter(program_id=program_id, held_at__isnull=False)
    if rule is not None:
        rows = rows.filter(hold_rule="" if rule == OWNER_HOLD else rule)
    if partner_id is not None:
        rows = rows.filter(partner_id=partner_id)
    return rows.select_related(*ROW_RELATED).order_by("-created_at", "-id")


def reviews_recent(*, program_id: int, limit: int) -> list[CommissionReview]:
    """The program's latest hold decisions, newest first, each with its commission's partner."""
    rows = CommissionReview.objects.filter(program_id=program_id).select_related("commission__partner")
    return list(rows.order_by("-created_at", "-id")[:limit])


def review_partners(*, program_id: int) -> list[Partner]:
    """The program's enrolled partners by name, for the review filters."""
    enrolled = PartnerProgram.objects.filter(program_id=program_id).values("partner_id")
    return list(Partner.objects.filter(pk__in=enrolled).only("pk", "name").order_by("name", "pk")[:REVIEW_PARTNERS_CAP])
