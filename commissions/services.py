"""Commission lifecycle and the partner ledger. Every status change that moves money writes its
ledger entry in the same transaction, with the commission row locked."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Protocol

from django.db import transaction
from django.db.models import Min, Sum
from django.utils import timezone

from core import messages
from core.money import money
from core.providers import Providers
from core.tasks import enqueue
from fraud.sale import NO_FLAGS, SaleFlags
from groups.terms import GroupTerms, partner_terms, program_terms
from programs.models import RECURRING_TYPES, CrossWorkspace, Partner, Program
from webhooks.events import event_emit
from webhooks.models import EventType
from webhooks.payloads import refund_data

from .approval import (
    approve,
    commission_approve_early,
    commission_event_emit,
    commission_insert,
    ledger_credit,
    review_entry,
    review_new,
)
from .calculations import NoCommission, commission_amount, commission_refusal, refund_step
from .followers import commission_refunded, commission_status_changed
from .models import (
    Commission,
    CommissionReview,
    CommissionStatus,
    LedgerEntry,
    NotificationOutbox,
    ProductCommissionRate,
    Withdrawal,
)
from .selectors import commissions_with_money
from .tasks import notification_outbox_deliver_task

if TYPE_CHECKING:
    from .selectors import CommissionWithMoney

PAST_PENDING = frozenset({CommissionStatus.APPROVED, CommissionStatus.PAID})


@dataclass(frozen=True)
class CommissionPolicy:
    """The type and rate a sale is settled with, and where they come from: the partner's group (the default
    group's are the program's), or the group's per-product override matching the sale's product_id (then
    product_id is the override's)."""

    commission_type: str
    rate: Decimal
    source: Literal["program", "product"] = "program"
    product_id: str = ""
    terms: GroupTerms | None = None


def commission_policy(*, program: Program, product_id: str, terms: GroupTerms | None = None) -> CommissionPolicy:
    """The group's type and rate (`terms`; None: the default group's, the program's), or the group's per-product
    override matching the sale's product_id."""
    terms = terms or program_terms(program)
    if product_id:
        override = ProductCommissionRate.objects.filter(
            program=program, group_id=terms.group_id, product_id=product_id
        ).first()
        if override is not None:
            return CommissionPolicy(
                commission_type=override.commission_type,
                rate=override.commission_rate,
                source="product",
                product_id=product_id,
                terms=terms,
            )
    return CommissionPolicy(commission_type=terms.commission_type, rate=terms.rate, terms=terms)


SALE_OF_ANOTHER_PROGRAM = "Sale #{sale} and customer #{customer} must both be rows of program #{program}"


@dataclass(frozen=True)
class SaleCommission:
    """What a sale's commission settlement came to: its commission, or why it pays nothing."""

    commission: Commission | None
    no_commission: NoCommission | None = None
    created: bool = False  # False when an earlier run had already settled the sale
    terms: GroupTerms | None = None  # the terms it was decided under (None: not decided by this run)


class SettledSale(Protocol):
    """What commission_settle reads of a sale (tracking's SaleEvent)."""

    pk: Any
    program_id: Any
    partner_id: Any
    product_id: str
    sale_date: datetime
    is_recurring: bool
    amount_cents: int
    currency: str


def commission_settle(
    *,
    sale: SettledSale,
    customer: Any,
    first_sale_at: datetime,
    program: Program,
    now: datetime,
    flags: SaleFlags = NO_FLAGS,
) -> SaleCommission:
    """commission_for_sale, then the commission it decides on inserted (commissions.approval.commission_insert)."""
    settled = commission_for_sale(
        sale=sale, customer=customer, first_sale_at=first_sale_at, program=program, now=now, flags=flags
    )
    if settled.commission is not None:
        commission_insert(settled.commission)
    return settled


def commission_for_sale(
    *,
    sale: SettledSale,
    customer: Any,
    first_sale_at: datetime,
    program: Program,
    now: datetime,
    flags: SaleFlags = NO_FLAGS,
) -> SaleCommission:
    """The commission an attributed live sale earns, unsaved (commission_settle inserts it in the caller's
    transaction, tracking.services.settlement.commission_create_for_sale's; tracking.services.settlement.
    sale_settled_at_once inserts it with its sale), or why the sale earns none.

    Decides with the sale's product policy (commission_refusal: percent/fixed pay every sale but renewals;
    recurring_* pay every sale within duration_months of the customer's first commissioned sale) at the sale's
    own time, then makes the commission (approved and credited at once with hold_days 0) or returns why it
    pays nothing. `first_sale_at` is the customer's first live sale; `now` is when the commission is created
    and its hold starts. `flags`: the fraud rules that fired; one that holds puts the commission on hold as it is
    created (pending, even with hold_days 0: nothing is credited until an owner releases it). Raises
    CrossWorkspace when the sale or the customer is another program's (commission_settle's insert raises
    IntegrityError when the sale already has its commission)."""
    # Rows of one program are rows of one workspace, compared without a query. The partner is not read here: it
    # is the one attribution found through this program's link, and a link or an enrolment never holds another
    # workspace's partner (programs.models.same_workspace, in their clean() and services).
    if sale.program_id != program.pk or customer.program_id != program.pk:
        raise CrossWorkspace(SALE_OF_ANOTHER_PROGRAM.format(sale=sale.pk, customer=customer.pk, program=program.pk))
    terms = partner_terms(partner_id=sale.partner_id, program=program)
    policy = commission_policy(program=program, product_id=sale.product_id, terms=terms)
    commission_type, rate = policy.commission_type, policy.rate
    first_commissioned_at = None
    if commission_type in RECURRING_TYPES and terms.duration_months and first_sale_at < sale.sale_date:
        first_commissioned_at = _first_commissioned_at(customer_id=customer.pk)
    refusal = commission_refusal(
        commission_type=commission_type,
        is_renewal=sale.is_recurring,
        sale_at=sale.sale_date,
        first_commissioned_at=first_commissioned_at,
        duration_months=terms.duration_months,
    )
    if refusal is not None:
        return SaleCommission(commission=None, no_commission=refusal, terms=terms)
    instant = terms.hold_days == 0 and flags.hold is None
    amount = commission_amount(sale_amount=sale.amount_cents, commission_type=commission_type, rate=rate)
    commission = Commission(
        program=program,
        partner_id=sale.partner_id,
        sale_id=sale.pk,
        customer=customer,
        amount_cents=amount,
        currency=sale.currency,
        status=CommissionStatus.APPROVED if instant else CommissionStatus.PENDING,
        credited=instant,
        approved_at=now if instant else None,
        hold_until=now + timedelta(days=terms.hold_days),
        group_id=terms.group_id,
        commission_type=commission_type,
        commission_rate=rate,
        held_at=now if flags.hold else None,
        hold_rule=flags.hold.rule if flags.hold else "",
        hold_reason=flags.hold.text if flags.hold else "",
        flags=flags.rules,
        created_at=now,
    )
    return SaleCommission(commission=commission, created=True, terms=terms)


def _first_commissioned_at(*, customer_id: int) -> datetime | None:
    """When the customer's first commissioned sale happened: the earliest sale that has a commission, whatever
    that commission's status (a refund does not move the recurring period)."""
    commissions = Commission.objects.filter(customer_id=customer_id)
    first: datetime | None = commissions.aggregate(first=Min("sale__sale_date"))["first"]
    return first


def partner_balance(*, partner_id: int, currency: str) -> int:
    total = LedgerEntry.objects.filter(partner_id=partner_id, currency=currency).aggregate(total=Sum("amount_cents"))
    return total["total"] or 0


# Called, in order, after a clawback with the partner row locked (partner_id=, currency=), before this app's own
# withdrawals_fit_balance: payouts not sent yet are reduced before open withdrawals. The payouts app sits above
# commissions, so it is named by path (core.providers).
balance_fitters: Providers[Callable[..., None]] = Providers("payouts.ledger.payouts_fit_balance")
# Called with a commission being refunded (its row locked, after the clawback): True when the money paid for it has
# left by a way this app does not record on the commission (the payouts app: a payout exported, sent or paid covers
# it), so the advertiser gets the manual-review warning, as for a `paid` commission.
paid_out_checks: Providers[Callable[[Commission], bool]] = Providers("payouts.ledger.commission_paid_out")


def withdrawals_fit_balance(*, partner_id: int, currency: str) -> None:
    """Open withdrawals may not ask for more than the balance: after a clawback they are reduced,
    newest first, and cancelled when nothing is left. Caller holds the partner row lock."""
    available = max(0, partner_balance(partner_id=partner_id, currency=currency))
    open_requests = list(
        Withdrawal.objects.select_for_update()
        .filter(partner_id=partner_id, currency=currency, status=Withdrawal.Status.OPEN)
        .order_by("-created_at", "-pk")
    )
    excess = sum(w.amount_cents for w in open_requests) - available
    for withdrawal in open_requests:
        if excess <= 0:
            break
        cut = min(withdrawal.amount_cents, excess)
        withdrawal.amount_cents -= cut
        if withdrawal.amount_cents == 0:
            withdrawal.status = Withdrawal.Status.CANCELLED
        withdrawal.save(update_fields=["amount_cents", "status", "updated_at"])
        excess -= cut


def _deduct(commission: Commission, *, amount: int, memo: str) -> None:
    """Takes `amount` of the commission back from its partner's balance, in the caller's transaction (which holds
    the commission row): the partner row is locked for the deduction, and open withdrawals are reduced to fit."""
    Partner.objects.select_for_update().filter(pk=commission.partner_id).first()
    LedgerEntry.objects.create(
        partner_id=commission.partner_id,
        program_id=commission.program_id,
        commission=commission,
        kind=LedgerEntry.Kind.DEDUCTION,
        amount_cents=-amount,
        currency=commission.currency,
        memo=memo,
    )
    for fit in balance_fitters:
        fit(partner_id=commission.partner_id, currency=commission.currency)
    withdrawals_fit_balance(partner_id=commission.partner_id, currency=commission.currency)


class WithdrawalTooLarge(Exception):
    pass


def withdrawal_request(*, partner: Partner, amount_cents: int, currency: str) -> Withdrawal:
    with transaction.atomic():
        Partner.objects.select_for_update().get(pk=partner.pk)
        open_total = (
            Withdrawal.objects.filter(partner=partner, currency=currency, status=Withdrawal.Status.OPEN).aggregate(
                total=Sum("amount_cents")
            )["total"]
            or 0
        )
        if amount_cents <= 0 or open_total + amount_cents > partner_balance(partner_id=partner.pk, currency=currency):
            raise WithdrawalTooLarge(f"Balance does not cover a withdrawal of {money(amount_cents, currency)}")
        return Withdrawal.objects.create(
            partner=partner, amount_cents=amount_cents, requested_cents=amount_cents, currency=currency
        )


def withdrawal_mark_paid(*, withdrawal: Withdrawal) -> bool:
    """Pays an open withdrawal: a payout ledger entry, and the partner's oldest credited commissions that
    the payout covers become `paid` (a later refund of one of them warns the advertiser). Returns False, and
    changes nothing, when the withdrawal is no longer open.
    Locks in the refund path's order (commissions, partner, withdrawals) so the two cannot deadlock."""
    with transaction.atomic():
        commissions = list(
            Commission.objects.select_for_update()
            .filter(
                partner_id=withdrawal.partner_id,
                currency=withdrawal.currency,
                status=CommissionStatus.APPROVED,
            )
            .order_by("approved_at", "pk")
        )
        Partner.objects.select_for_update().get(pk=withdrawal.partner_id)
        withdrawal = Withdrawal.objects.select_for_update().get(pk=withdrawal.pk)
        if withdrawal.status != Withdrawal.Status.OPEN:
            return False
        withdrawal.status = Withdrawal.Status.PAID
        withdrawal.save(update_fields=["status", "updated_at"])
        LedgerEntry.objects.create(
            partner_id=withdrawal.partner_id,
            kind=LedgerEntry.Kind.PAYOUT,
            amount_cents=-withdrawal.amount_cents,
            currency=withdrawal.currency,
            memo=f"Withdrawal #{withdrawal.pk} paid",
        )
        covered = withdrawal.amount_cents
        for commission in commissions:
            net = commission.amount_cents - commission.deducted_cents
            if net > covered:
                break
            covered -= net
            commission.status = CommissionStatus.PAID
            commission.save(update_fields=["status", "updated_at"])
    return True


def withdrawal_cancel(*, withdrawal: Withdrawal) -> bool:
    """Cancels an open withdrawal; nothing was paid, so the ledger is untouched. Returns False, and changes
    nothing, when it is no longer open. Locks partner then withdrawal, the order every withdrawal write uses."""
    with transaction.atomic():
        Partner.objects.select_for_update().get(pk=withdrawal.partner_id)
        locked = Withdrawal.objects.select_for_update().get(pk=withdrawal.pk)
        if locked.status != Withdrawal.Status.OPEN:
            return False
        locked.status = Withdrawal.Status.CANCELLED
        locked.save(update_fields=["status", "updated_at"])
    return True


@dataclass(frozen=True)
class RefundOutcome:
    """What one refund did to the sale's commission: reversed or refunded (with the deduction), skipped
    (with the reason), or no_commission (with the message)."""

    status: str  # reversed | refunded | skipped | no_commission
    commission_id: int | None = None
    deduction: int | None = None
    reason: str | None = None
    message: str | None = None


class RefundedSale(Protocol):
    """What refund_apply reads of the refunded sale (tracking's SaleEvent)."""

    pk: Any
    amount_cents: int
    currency: str


SKIP_ALREADY_REVERSED = "already reversed"
SKIP_REFUND_ID_APPLIED = "refund already applied"
SKIP_SAME_AMOUNT_RETRY = "same refund amount already applied; treated as a retry"


def refund_apply(*, sale: RefundedSale, amount: int | None, refund_id: str | None, reason: str) -> RefundOutcome:
    """Applies one refund of a sale to its commission; the refund endpoint and the processor's refund
    event both come here. The commission row is locked, so concurrent refunds serialise and the
    cumulative arithmetic never claws back twice. Status, refund bookkeeping, the ledger deduction and the
    notifications' outbox row commit together; the notifications are delivered after commit (or, when the
    broker is down, by the outbox sweep) and never affect the result."""
    with transaction.atomic():
        commission = Commission.objects.select_for_update().filter(sale_id=sale.pk).first()
        if commission is None:
            return RefundOutcome(status="no_commission", message=messages.REFUND_NO_COMMISSION)
        if commission.status == CommissionStatus.REVERSED:
            return RefundOutcome(status="skipped", commission_id=commission.pk, reason=SKIP_ALREADY_REVERSED)
        # refund_id and the same-amount retry rule only apply to refunds with an amount.
        if amount:
            if refund_id:
                if refund_id in commission.applied_refund_ids:
                    return RefundOutcome(status="skipped", commission_id=commission.pk, reason=SKIP_REFUND_ID_APPLIED)
            elif amount in commission.applied_anonymous_amounts:
                return RefundOutcome(status="skipped", commission_id=commission.pk, reason=SKIP_SAME_AMOUNT_RETRY)

        step = refund_step(
            sale_amount=sale.amount_cents,
            commission_amount=commission.amount_cents,
            refunded_before=commission.sale_refunded_cents,
            deducted_before=commission.deducted_cents,
            requested=amount,
        )
        was_paid_out = commission.status == CommissionStatus.PAID
        deduct_from_ledger = commission.credited and step.deduction > 0

        commission.sale_refunded_cents = step.refunded_total
        commission.deducted_cents = step.deducted_total
        commission.refund_count += 1
        if reason:
            commission.refund_reason = reason
        # A full refund's id is recorded too (it only skips refunds with an amount), listed once.
        if refund_id and refund_id not in commission.applied_refund_ids:
            commission.applied_refund_ids = [*commission.applied_refund_ids, refund_id]
        elif amount and not refund_id:
            commission.applied_anonymous_amounts = [*commission.applied_anonymous_amounts, amount]
        # A pending commission partly refunded is cancelled whole (selectors.cancelled_by_refund).
        commission.status = CommissionStatus.REVERSED if step.full else CommissionStatus.REFUNDED
        # Only a pending commission is ever held, and a refund leaves nothing of it to pay: the hold ends, and
        # the review log says why (nothing is left for an owner to release or void).
        hold_ended = commission.held_at is not None
        if hold_ended:
            commission_review_record(
                commission,
                action=CommissionReview.Action.ENDED,
                actor="refund",
                rule=commission.hold_rule,
                reason=f"the sale was refunded ({money(step.refund_amount, sale.currency)})",
            )
            commission.held_at, commission.hold_rule, commission.hold_reason = None, "", ""
        commission.save()
        commission_refunded(commission)  # bonuses it takes back (tiers.milestones), before the ledger moves
        if deduct_from_ledger:
            _deduct(
                commission,
                amount=step.deduction,
                memo=f"Refund of sale #{sale.pk} ({money(step.refund_amount, sale.currency)})",
            )
        # Asked after the clawback: what it could still take back from payouts not sent yet is taken, so a payout
        # found sent now has left with the commission's money.
        was_paid_out = was_paid_out or any(check(commission) for check in paid_out_checks)
        outbox = NotificationOutbox.objects.create(
            commission=commission,
            refund_step=commission.refund_count,
            was_paid_out=was_paid_out,
            reversed=step.full,
            refund_reason=commission.refund_reason,
        )

        commission_event_emit(commission, EventType.COMMISSION_REVERSED if step.full else EventType.COMMISSION_REFUNDED)
        event_emit(
            program_id=commission.program_id,
            type=EventType.REFUND_APPLIED,
            livemode=True,
            data=refund_data(
                sale=sale,
                commission=commission,
                refund_id=refund_id,
                amount=amount,
                deduction=step.deduction,
                reason=reason,
            ),
        )

        transaction.on_commit(lambda: enqueue(notification_outbox_deliver_task, outbox.pk))
        commission_status_changed(commission)  # the partner's email (refunded or reversed), after commit
    return RefundOutcome(status=commission.status, commission_id=commission.pk, deduction=step.deduction)


# --- Owner actions: hold, release, void ----------------------------------------------------------------------


class CommissionActionRefused(Exception):
    """The commission's state does not allow the action; the message says why."""


def commission_review_record(
    commission: Commission, *, action: str, actor: str, reason: str = "", rule: str = "", memo: str = ""
) -> CommissionReview:
    """Writes a hold decision in the caller's transaction: its review entry and, when `memo` is given, a ledger
    entry of no amount telling the partner's ledger what was decided (a decision that moves money writes its
    credit or deduction instead, with the same memo)."""
    if memo:
        review_entry(commission, memo).save(force_insert=True)
    review = review_new(commission, action=action, actor=actor, reason=reason, rule=rule)
    review.save(force_insert=True)
    return review


def _because(reason: str) -> str:
    return f": {reason}" if reason else ""


def commission_hold(*, commission_id: int, reason: str = "", actor: str, now: datetime | None = None) -> Commission:
    """Places a pending commission on hold: it is not approved when its hold period ends, until released.
    Holding a held commission again only updates the reason (and is recorded again)."""
    with transaction.atomic():
        commission = Commission.objects.select_for_update().get(pk=commission_id)
        if commission.status != CommissionStatus.PENDING:
            raise CommissionActionRefused(messages.COMMISSION_HOLD_NOT_PENDING.format(status=commission.status))
        # Holding a rule-held commission again keeps the rule that held it: only the reason changes.
        commission.hold_rule = commission.hold_rule if commission.held_at else ""
        commission.held_at = commission.held_at or now or timezone.now()
        commission.hold_reason = reason
        commission.save(update_fields=["held_at", "hold_reason", "hold_rule", "updated_at"])
        commission_review_record(
            commission,
            action=CommissionReview.Action.HELD,
            actor=actor,
            reason=reason,
            rule=commission.hold_rule,
            memo=f"Commission #{commission.pk} held{_because(reason)}",
        )
    return commission


def commission_release(*, commission_id: int, actor: str, reason: str = "", now: datetime | None = None) -> Commission:
    """Takes a commission off hold. A pending one whose hold period has ended is approved and credited at once, in
    the same transaction; one still in its hold period is approved by the hold job when it ends."""
    now = now or timezone.now()
    with transaction.atomic():
        commission = Commission.objects.select_for_update().get(pk=commission_id)
        if commission.held_at is None:
            raise CommissionActionRefused(messages.COMMISSION_NOT_HELD)
        rule = commission.hold_rule
        commission.held_at = None
        commission.hold_reason = ""
        commission.hold_rule = ""
        commission.save(update_fields=["held_at", "hold_reason", "hold_rule", "updated_at"])
        due = commission.status == CommissionStatus.PENDING and commission.hold_until <= now
        released = f"Commission #{commission.pk} released from hold{_because(reason)}"
        commission_review_record(
            commission,
            action=CommissionReview.Action.RELEASED,
            actor=actor,
            reason=reason,
            rule=rule,
            # Approval writes the credit, which is the ledger's record of the release.
            memo="" if due else f"{released}; credited when its hold period ends",
        )
        if due:
            approve(commission, now, memo=f"{released}; approved")
    return commission


def commission_void(
    *, commission_id: int, reason: str, actor: str, now: datetime | None = None, only_held: bool = False
) -> Commission:
    """Voids a commission: it is reversed whole and pays nothing. What it had credited to the partner and not yet
    taken back is deducted from the ledger in the same transaction (open withdrawals are then reduced to fit).
    A paid commission is refused (the money has left; refund the sale instead), as is one already reversed.
    `only_held`: refused too unless it is on hold, checked under the row lock (a review page's Void decides on a
    hold, and must not undo a release that landed a moment before)."""
    with transaction.atomic():
        commission = Commission.objects.select_for_update().get(pk=commission_id)
        if only_held and commission.held_at is None:
            raise CommissionActionRefused(messages.COMMISSION_NOT_HELD)
        if commission.status == CommissionStatus.PAID:
            raise CommissionActionRefused(messages.COMMISSION_VOID_PAID)
        if commission.status == CommissionStatus.REVERSED:
            raise CommissionActionRefused(messages.COMMISSION_VOID_REVERSED)
        still_credited = commission.amount_cents - commission.deducted_cents if commission.credited else 0
        rule = commission.hold_rule
        commission.status = CommissionStatus.REVERSED
        commission.voided_at = now or timezone.now()
        commission.void_reason = reason
        commission.held_at = None
        commission.hold_rule = ""
        if still_credited > 0:
            commission.deducted_cents = commission.amount_cents
        commission.save()
        memo = f"Commission #{commission.pk} voided{_because(reason)}"
        commission_review_record(
            commission,
            action=CommissionReview.Action.VOIDED,
            actor=actor,
            reason=reason,
            rule=rule,
            memo="" if still_credited > 0 else memo,
        )
        if still_credited > 0:
            _deduct(commission, amount=still_credited, memo=memo[:255])
        commission_event_emit(commission, EventType.COMMISSION_REVERSED)
    return commission


def commission_paid_elsewhere(*, commission_id: int, memo: str, now: datetime | None = None) -> Commission:
    """Marks paid a commission another system paid (the platform an import came from paid it after the import):
    credited first if it was not yet, then a payout entry for all of it, and status paid, in one transaction, so it
    is never paid here too. Refused (CommissionActionRefused, nothing changed) unless it is pending or approved, not
    held, untouched by refunds and covered by no payout here that has left or may leave (paid_out_checks); a draft
    payout or open withdrawal that then asks more than the balance is reduced to fit, as after a clawback. Nothing
    is announced: the payment happened elsewhere."""
    with transaction.atomic():
        commission = Commission.objects.select_for_update().get(pk=commission_id)
        if commission.status not in (CommissionStatus.PENDING, CommissionStatus.APPROVED):
            raise CommissionActionRefused(f"it is {commission.get_status_display().lower()} here")
        if commission.held_at is not None:
            raise CommissionActionRefused("it is held for review here")
        if commission.deducted_cents or commission.sale_refunded_cents:
            raise CommissionActionRefused("a refund was applied to it here")
        if any(check(commission) for check in paid_out_checks):
            raise CommissionActionRefused("a payout here covers it already")
        Partner.objects.select_for_update().filter(pk=commission.partner_id).first()
        if not commission.credited:
            ledger_credit(commission)
            commission.credited = True
            commission.approved_at = now or timezone.now()
        commission.status = CommissionStatus.PAID
        commission.save(update_fields=["credited", "approved_at", "status", "updated_at"])
        LedgerEntry.objects.create(
            partner_id=commission.partner_id,
            program_id=commission.program_id,
            commission=commission,
            kind=LedgerEntry.Kind.PAYOUT,
            amount_cents=-commission.amount_cents,
            currency=commission.currency,
            memo=memo[:255],
        )
        for fit in balance_fitters:
            fit(partner_id=commission.partner_id, currency=commission.currency)
        withdrawals_fit_balance(partner_id=commission.partner_id, currency=commission.currency)
    return commission


OwnerDecision = Literal["approve", "void", "hold", "release"]


@dataclass(frozen=True)
class CommissionDecided:
    """A commission as an owner's decision found it and as it left it, each with what it pays."""

    before: "CommissionWithMoney"
    after: "CommissionWithMoney"


def _commission_with_money(commission_id: int) -> "CommissionWithMoney":
    return commissions_with_money(Commission.objects.filter(pk=commission_id).select_related("partner", "sale")).get()


def commission_decide(
    *, commission_id: int, decision: OwnerDecision, actor: str, reason: str = ""
) -> CommissionDecided:
    """An owner's decision on a commission: approve it early, void, hold or release it. The row lock is taken
    before the commission is read, so `before` is the state the decision found (the decision's own service takes
    the lock again). Raises CommissionNotApprovable (approve) or CommissionActionRefused (the others) when the
    commission's state does not allow it.

    It opens no savepoint of its own (the decision's service opens one): inside a caller's transaction an error
    leaves that transaction to be rolled back, as the agent API's writes do."""
    with transaction.atomic(savepoint=False):
        Commission.objects.select_for_update().filter(pk=commission_id).values_list("pk", flat=True).first()
        before = _commission_with_money(commission_id)
        if decision == "approve":
            commission_approve_early(commission_id=commission_id)
        elif decision == "void":
            commission_void(commission_id=commission_id, reason=reason, actor=actor)
        elif decision == "hold":
            commission_hold(commission_id=commission_id, reason=reason, actor=actor)
        else:
            commission_release(commission_id=commission_id, actor=actor, reason=reason)
        after = _commission_with_money(commission_id)
    return CommissionDecided(before=before, after=after)
