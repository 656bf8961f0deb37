"""Commission lifecycle and the partner ledger. Every status change that moves money writes its
ledger entry in the same transaction, with the commission row locked."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from core import messages
from core.tasks import enqueue
from programs.models import Partner, Program
from tracking.models import Customer, SaleEvent

from .calculations import commission_amount, commission_applies, refund_step
from .models import Commission, CommissionStatus, LedgerEntry, Notification, ProductCommissionRate, Withdrawal

PAST_PENDING = frozenset({CommissionStatus.APPROVED, CommissionStatus.PAID})


def commission_policy(*, program: Program, product_id: str) -> tuple[str, Decimal]:
    """The program's type and rate, or a per-product override matching the sale's product_id."""
    if product_id:
        override = ProductCommissionRate.objects.filter(program=program, product_id=product_id).first()
        if override is not None:
            return override.commission_type, override.commission_rate
    return program.commission_type, program.commission_rate


def commission_create_for_sale(
    *, sale: SaleEvent, customer: Customer, program: Program, now: datetime
) -> Commission | None:
    """Creates the sale's commission, or None when the program's policy pays nothing for it.
    Must run inside the caller's transaction. With hold_days 0 it is approved and credited at once."""
    commission_type, rate = commission_policy(program=program, product_id=sale.product_id)
    if not commission_applies(
        commission_type=commission_type,
        first_sale_at=customer.first_sale_at,
        now=now,
        duration_months=program.duration_months,
    ):
        return None
    amount = commission_amount(sale_amount=sale.amount_cents, commission_type=commission_type, rate=rate)
    instant = program.hold_days == 0
    commission = Commission.objects.create(
        program=program,
        partner_id=sale.partner_id,
        sale=sale,
        customer=customer,
        amount_cents=amount,
        currency=sale.currency,
        status=CommissionStatus.APPROVED if instant else CommissionStatus.PENDING,
        credited=instant,
        approved_at=now if instant else None,
        hold_until=now + timedelta(days=program.hold_days),
    )
    if instant:
        _ledger_credit(commission)
    return commission


def _ledger_credit(commission: Commission) -> None:
    LedgerEntry.objects.create(
        partner_id=commission.partner_id,
        program_id=commission.program_id,
        commission=commission,
        kind=LedgerEntry.Kind.CREDIT,
        amount_cents=commission.amount_cents,
        currency=commission.currency,
        memo=f"Commission #{commission.pk} approved",
    )


def commission_approve(*, commission_id: int, now: datetime | None = None) -> bool:
    """Moves one commission out of its hold and credits the partner. False when it is not due or no
    longer pending (refunded during the hold, or approved by a concurrent run)."""
    now = now or timezone.now()
    with transaction.atomic():
        # skip_locked: a commission being refunded right now is left for the next run.
        commission = (
            Commission.objects.select_for_update(skip_locked=True)
            .filter(pk=commission_id, status=CommissionStatus.PENDING, hold_until__lte=now)
            .first()
        )
        if commission is None:
            return False
        commission.status = CommissionStatus.APPROVED
        commission.credited = True
        commission.approved_at = now
        commission.save(update_fields=["status", "credited", "approved_at", "updated_at"])
        _ledger_credit(commission)
    return True


def commissions_approve_due(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Approves every commission whose hold period has ended. Returns how many were approved."""
    now = now or timezone.now()
    approved = 0
    while True:
        due = list(
            Commission.objects.filter(status=CommissionStatus.PENDING, hold_until__lte=now)
            .order_by("hold_until")
            .values_list("pk", flat=True)[:batch_size]
        )
        batch_approved = sum(commission_approve(commission_id=pk, now=now) for pk in due)
        approved += batch_approved
        if len(due) < batch_size or batch_approved == 0:
            return approved


def partner_balance(*, partner_id: int, currency: str) -> int:
    total = LedgerEntry.objects.filter(partner_id=partner_id, currency=currency).aggregate(total=Sum("amount_cents"))
    return total["total"] or 0


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
            raise WithdrawalTooLarge(f"Balance does not cover a withdrawal of {amount_cents} {currency}")
        return Withdrawal.objects.create(
            partner=partner, amount_cents=amount_cents, requested_cents=amount_cents, currency=currency
        )


def withdrawal_mark_paid(*, withdrawal: Withdrawal) -> None:
    """Pays an open withdrawal: a payout ledger entry, and the partner's oldest credited commissions that
    the payout covers become `paid` (a later refund of one of them warns the advertiser).
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
            return
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


@dataclass(frozen=True)
class RefundResult:
    status: str  # reversed | refunded | skipped | no_commission
    commission_id: int | None = None
    deduction: int | None = None
    reason: str | None = None
    message: str | None = None

    def as_response(self) -> dict:
        body: dict = {"success": True, "status": self.status}
        if self.status in ("reversed", "refunded"):
            body["deductionAmount"] = self.deduction
            body["commission_id"] = self.commission_id
        elif self.status == "skipped":
            body["reason"] = self.reason
            body["commission_id"] = self.commission_id
        else:
            body["message"] = self.message
        return body


SKIP_ALREADY_REVERSED = "already reversed"
SKIP_REFUND_ID_APPLIED = "refund already applied"
SKIP_SAME_AMOUNT_RETRY = "same refund amount already applied; treated as a retry"


def refund_apply(*, sale: SaleEvent, amount: int | None, refund_id: str | None, reason: str) -> RefundResult:
    """Applies one refund of a sale to its commission; the refund endpoint and the processor's refund
    event both come here. The commission row is locked, so concurrent refunds serialise and the
    cumulative arithmetic never claws back twice. Status, refund bookkeeping and the ledger deduction
    commit together; notifications are sent after commit and never affect the result."""
    with transaction.atomic():
        commission = Commission.objects.select_for_update().filter(sale_id=sale.pk).first()
        if commission is None:
            return RefundResult(status="no_commission", message=messages.REFUND_NO_COMMISSION)
        if commission.status == CommissionStatus.REVERSED:
            return RefundResult(status="skipped", commission_id=commission.pk, reason=SKIP_ALREADY_REVERSED)
        # refund_id and the same-amount retry rule only apply to refunds with an amount.
        if amount:
            if refund_id:
                if refund_id in commission.applied_refund_ids:
                    return RefundResult(status="skipped", commission_id=commission.pk, reason=SKIP_REFUND_ID_APPLIED)
            elif amount in commission.applied_anonymous_amounts:
                return RefundResult(status="skipped", commission_id=commission.pk, reason=SKIP_SAME_AMOUNT_RETRY)

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
        if amount:
            if refund_id:
                commission.applied_refund_ids = [*commission.applied_refund_ids, refund_id]
            else:
                commission.applied_anonymous_amounts = [*commission.applied_anonymous_amounts, amount]
        # A pending commission partly refunded is cancelled whole: it will never be credited.
        commission.status = CommissionStatus.REVERSED if step.full else CommissionStatus.REFUNDED
        commission.save()

        if deduct_from_ledger:
            Partner.objects.select_for_update().filter(pk=commission.partner_id).first()
            LedgerEntry.objects.create(
                partner_id=commission.partner_id,
                program_id=commission.program_id,
                commission=commission,
                kind=LedgerEntry.Kind.DEDUCTION,
                amount_cents=-step.deduction,
                currency=commission.currency,
                memo=f"Refund of sale #{sale.pk} ({step.refund_amount} {sale.currency})",
            )
            withdrawals_fit_balance(partner_id=commission.partner_id, currency=commission.currency)

        from .tasks import notify_refund_task

        step_number = commission.refund_count
        transaction.on_commit(lambda: enqueue(notify_refund_task, commission.pk, step_number, was_paid_out))
    return RefundResult(status=commission.status, commission_id=commission.pk, deduction=step.deduction)


def refund_notifications_create(*, commission_id: int, step: int, was_paid_out: bool) -> int:
    """In-app notice to the partner; a manual-review warning to the advertiser when the commission had
    already been paid out. Idempotent per refund step, so a retried task never notifies twice."""
    commission = Commission.objects.select_related("program", "partner").get(pk=commission_id)
    reversed_ = commission.status == CommissionStatus.REVERSED
    kind = Notification.Kind.COMMISSION_REVERSED if reversed_ else Notification.Kind.COMMISSION_REFUNDED
    reason = f" Reason: {commission.refund_reason}." if commission.refund_reason else ""
    wanted = [
        Notification(
            audience=Notification.Audience.PARTNER,
            kind=kind,
            partner_id=commission.partner_id,
            commission=commission,
            dedupe_key=f"{commission_id}:{step}",
            message=(
                f"Commission #{commission_id} in {commission.program.name} was "
                f"{'reversed' if reversed_ else 'reduced by a partial refund'}.{reason}"
            ),
        )
    ]
    if was_paid_out:
        wanted.append(
            Notification(
                audience=Notification.Audience.ADVERTISER,
                kind=Notification.Kind.MANUAL_REVIEW,
                workspace_id=commission.program.workspace_id,
                commission=commission,
                dedupe_key=f"{commission_id}:{step}",
                message=(
                    f"Commission #{commission_id} to {commission.partner.name} was already paid out and its sale "
                    f"was refunded. Review it: the partner's balance is now reduced.{reason}"
                ),
            )
        )
    created = 0
    for notification in wanted:
        try:
            with transaction.atomic():
                notification.save()
            created += 1
        except IntegrityError:
            pass  # already sent for this step
    return created
