"""Money movements of a payout after it is made: settled paid or failed, reduced by a clawback before it is sent,
and the run's audit trail. Each change and its ledger entry commit together; the partner is emailed after commit.
Lock order, as the refund path's: commissions, then partners, then payouts."""

from datetime import datetime

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core.tasks import enqueue
from programs.models import Partner, PartnerAccount
from webhooks.events import event_emit
from webhooks.models import EventType

from .emails import payout_email_task
from .models import (
    OPEN_PAYOUT_STATUSES,
    Payout,
    PayoutAccount,
    PayoutCommission,
    PayoutRun,
    PayoutRunAudit,
    PayoutStatus,
)
from .payloads import payout_event_data


class PayoutError(Exception):
    """Refused; the message is shown to the person or agent who asked, as is."""


class RunAlreadyConfirmed(PayoutError):
    pass


DEBIT_MEMO = "Payout #{pk}"
REDUCED_MEMO = "Payout #{pk} reduced by a refund before it was sent"
FAILED_MEMO = "Payout #{pk} failed: back on the balance"


def _audit(run: PayoutRun, action: str, actor: str, detail: str = "") -> None:
    PayoutRunAudit.objects.create(run=run, action=action, actor=actor[:200], detail=detail[:500])


def payout_account_for(account: PartnerAccount) -> PayoutAccount:
    payout_account, _ = PayoutAccount.objects.get_or_create(account=account)
    return payout_account


def payout_mark_paid(
    *, payout_id: int, actor: str = "", reference: str = "", transfer_id: str = "", now: datetime | None = None
) -> bool:
    """Settles an open payout as paid: its covered commissions become `paid`. Returns False, and changes nothing,
    when it is no longer open. Locks the commissions first, as the refund path does."""
    now = now or timezone.now()
    with transaction.atomic():
        covered = list(
            PayoutCommission.objects.filter(payout_id=payout_id, active=True).values_list("commission_id", flat=True)
        )
        list(Commission.objects.select_for_update().filter(pk__in=covered).order_by("pk"))
        payout = Payout.objects.select_for_update().get(pk=payout_id)
        if payout.status not in OPEN_PAYOUT_STATUSES:
            return False
        payout.status = PayoutStatus.PAID
        payout.paid_at = now
        payout.rail_reference = reference[:255] or payout.rail_reference
        payout.stripe_transfer_id = transfer_id or payout.stripe_transfer_id
        payout.save(update_fields=["status", "paid_at", "rail_reference", "stripe_transfer_id", "updated_at"])
        Commission.objects.filter(pk__in=covered, status=CommissionStatus.APPROVED).update(
            status=CommissionStatus.PAID, updated_at=now
        )
        if actor:
            _audit(payout.run, PayoutRunAudit.Action.MARKED_PAID, actor, f"payout #{payout.pk} {reference}".strip())
        event_emit(
            program_id=payout.program_id,
            type=EventType.PAYOUT_PAID,
            livemode=True,
            object_id=payout.pk,
            data=payout_event_data(payout),
        )
    _email_later(payout.pk, "paid")
    return True


def payout_mark_failed(
    *, payout_id: int, code: str, message: str, actor: str = "", now: datetime | None = None, after_paid: bool = False
) -> bool:
    """Settles an open payout (or, `after_paid`, a paid one whose transfer Stripe reversed) as failed: what it
    still held goes back on the partner's ledger, its commissions can be covered again, and the partner is told
    why. Returns False, and changes nothing, when it was already settled."""
    now = now or timezone.now()
    allowed = (*OPEN_PAYOUT_STATUSES, PayoutStatus.PAID) if after_paid else OPEN_PAYOUT_STATUSES
    with transaction.atomic():
        covered = list(
            PayoutCommission.objects.filter(payout_id=payout_id, active=True).values_list("commission_id", flat=True)
        )
        list(Commission.objects.select_for_update().filter(pk__in=covered).order_by("pk"))
        payout = Payout.objects.select_related("run").get(pk=payout_id)
        Partner.objects.select_for_update().filter(pk=payout.partner_id).first()
        payout = Payout.objects.select_for_update(of=("self",)).select_related("run").get(pk=payout_id)
        if payout.status not in allowed:
            return False
        was_paid = payout.status == PayoutStatus.PAID
        payout.status = PayoutStatus.FAILED
        payout.failed_at = now
        payout.failure_code = code[:100]
        payout.failure_message = message[:500]
        payout.save(update_fields=["status", "failed_at", "failure_code", "failure_message", "updated_at"])
        if payout.amount_cents:
            LedgerEntry.objects.create(
                partner_id=payout.partner_id,
                program_id=payout.program_id,
                kind=LedgerEntry.Kind.PAYOUT,
                amount_cents=payout.amount_cents,
                currency=payout.currency,
                memo=FAILED_MEMO.format(pk=payout.pk),
                payout=payout,
                created_at=now,
            )
        PayoutCommission.objects.filter(payout=payout, active=True).update(active=False)
        if was_paid:
            Commission.objects.filter(pk__in=covered, status=CommissionStatus.PAID).update(
                status=CommissionStatus.APPROVED, updated_at=now
            )
        if actor:
            _audit(payout.run, PayoutRunAudit.Action.MARKED_FAILED, actor, f"payout #{payout.pk}: {message}"[:500])
        event_emit(
            program_id=payout.program_id,
            type=EventType.PAYOUT_FAILED,
            livemode=True,
            object_id=payout.pk,
            data=payout_event_data(payout),
        )
    _email_later(payout.pk, "failed")
    return True


def _email_later(payout_id: int, event: str) -> None:
    """After the caller's transaction commits, a task emails the partner (a broker outage never reaches the
    caller)."""
    transaction.on_commit(lambda: enqueue(payout_email_task, payout_id, event))


def commission_paid_out(commission: Commission) -> bool:
    """Whether a payout that has left (exported or sent: `processing`; or `paid`) covers the commission: its refund
    then warns the advertiser as one of a paid commission does (commissions.services.paid_out_checks). The caller holds
    the commission lock; the covering payout is locked too, whatever its status (the refund path's last lock), so an
    export or a send at the same moment is either seen here or made after the refund, of what the refund left."""
    statuses = (
        Payout.objects.select_for_update(of=("self",))
        .filter(covered__commission=commission, covered__active=True)
        .values_list("status", flat=True)
    )
    return any(status in (PayoutStatus.PROCESSING, PayoutStatus.PAID) for status in statuses)


def payouts_fit_balance(*, partner_id: int, currency: str) -> None:
    """After a clawback (the caller holds the commission and partner locks): when the partner's balance in the
    currency fell below 0, payouts not sent yet are reduced by what is missing, newest first, each reduction given
    back on the ledger, and one reduced to nothing is cancelled. A payout already sent or exported is not touched:
    the balance stays negative and the next run nets it."""
    # Payouts not sent yet are rare: look for them first, so a refund without any costs this one statement.
    pending = list(
        Payout.objects.select_for_update()
        .filter(partner_id=partner_id, currency=currency, status=PayoutStatus.PENDING)
        .order_by("-created_at", "-pk")
    )
    if not pending:
        return
    balance = LedgerEntry.objects.filter(partner_id=partner_id, currency=currency).aggregate(total=Sum("amount_cents"))[
        "total"
    ]
    missing = -(balance or 0)
    for payout in pending:
        if missing <= 0:
            break
        cut = min(payout.amount_cents, missing)
        payout.amount_cents -= cut
        missing -= cut
        fields = ["amount_cents", "updated_at"]
        if payout.amount_cents == 0:
            payout.status = PayoutStatus.CANCELLED
            fields.append("status")
            PayoutCommission.objects.filter(payout=payout, active=True).update(active=False)
        payout.save(update_fields=fields)
        LedgerEntry.objects.create(
            partner_id=partner_id,
            program_id=payout.program_id,
            kind=LedgerEntry.Kind.PAYOUT,
            amount_cents=cut,
            currency=currency,
            memo=REDUCED_MEMO.format(pk=payout.pk),
            payout=payout,
        )
