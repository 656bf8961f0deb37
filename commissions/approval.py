"""The end of a commission's hold: approval credits the partner's ledger. Approved one by one, each in its own
transaction with its row lock, so a refund arriving at the same moment either sees the commission pending or
approved with its credit, never half of it."""

from datetime import datetime

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from core.sql import SqlValue, insert_family
from webhooks.events import event_emit, event_new, event_saved
from webhooks.models import EventType, WebhookEvent
from webhooks.payloads import commission_data

from .followers import approval_job_done, commission_status_changed
from .models import Commission, CommissionReview, CommissionStatus, LedgerEntry

CREDIT_MEMO = "Commission #{pk} approved"


def _credit_entry(commission: Commission, memo: str = "") -> LedgerEntry:
    return LedgerEntry(
        partner_id=commission.partner_id,
        program_id=commission.program_id,
        commission=commission,
        kind=LedgerEntry.Kind.CREDIT,
        amount_cents=commission.amount_cents,
        currency=commission.currency,
        memo=(memo or CREDIT_MEMO.format(pk=commission.pk))[:255],
    )


def ledger_credit(commission: Commission, memo: str = "") -> None:
    _credit_entry(commission, memo).save(force_insert=True)


HELD_MEMO = "Commission #{pk} held by a fraud rule"
RULE_ACTOR = "rule"


def review_entry(commission: Commission, memo: str) -> LedgerEntry:
    """The unsaved ledger record, of no amount, of a decision on the commission's hold that moves no money."""
    return LedgerEntry(
        partner_id=commission.partner_id,
        program_id=commission.program_id,
        commission=commission,
        kind=LedgerEntry.Kind.REVIEW,
        amount_cents=0,
        currency=commission.currency,
        memo=memo[:255],
    )


def review_new(
    commission: Commission, *, action: str, actor: str, reason: str = "", rule: str = ""
) -> CommissionReview:
    """The unsaved review entry of a decision on the commission's hold (`rule`: the rule that held it, if any)."""
    return CommissionReview(
        commission=commission, program_id=commission.program_id, action=action, rule=rule, reason=reason, actor=actor
    )


def _rule_hold_rows(commission: Commission) -> tuple[LedgerEntry, CommissionReview]:
    """A commission held by a fraud rule as it is created: the ledger's record of it (no amount) and the review
    entry."""
    entry = review_entry(commission, HELD_MEMO.format(pk=commission.pk))
    review = review_new(
        commission,
        action=CommissionReview.Action.HELD,
        actor=RULE_ACTOR,
        reason=commission.hold_reason,
        rule=commission.hold_rule,
    )
    review.created_at = commission.created_at
    return entry, review


def commission_event(commission: Commission, event_type: str) -> WebhookEvent:
    """The unsaved webhook event announcing the commission as it is now (commissions are live money only)."""
    return event_new(program_id=commission.program_id, type=event_type, livemode=True, data=commission_data(commission))


def commission_event_emit(commission: Commission, event_type: str) -> None:
    """Writes the event in the caller's transaction (the commission's change and its event commit together)."""
    event_emit(
        program_id=commission.program_id,
        type=event_type,
        livemode=True,
        data=commission_data(commission),
        object_id=commission.pk,
    )


def commission_insert(commission: Commission) -> None:
    """Inserts a new commission with its commission.created event, and, when it is approved at once (hold 0),
    its ledger credit and commission.approved, or, when a fraud rule holds it (hold_rule), the hold's ledger entry
    and review entry; all of it commits together (core.sql.insert_family). Inside the caller's transaction no
    savepoint is taken: a failure undoes all of it with it."""
    events = commission_events(commission)
    insert_family(commission, commission_dependents(commission, events))
    for event in events:
        event_saved(event)


def commission_events(commission: Commission) -> list[WebhookEvent]:
    """The unsaved events a new commission announces: commission.created, and commission.approved when it is
    approved at once. The caller calls event_saved on each once they are inserted."""
    events = [commission_event(commission, EventType.COMMISSION_CREATED)]
    if commission.credited:
        events.append(commission_event(commission, EventType.COMMISSION_APPROVED))
    return events


def commission_dependents(
    commission: Commission, events: list[WebhookEvent], *, commission_id: str = "{first_id}"
) -> list[tuple[Model, dict[str, str | SqlValue]]]:
    """The rows inserted with a new commission, as insert_family's dependents: its ledger credit (approved at once)
    or its hold's ledger and review entries (held by a rule), then `events`. `commission_id` is how the statement
    names the commission's id: {first_id} when the commission is the first row, {dependent_N_id} when it is a
    dependent itself (inserted with its sale)."""
    dependents: list[tuple[Model, dict[str, str | SqlValue]]] = []
    if commission.credited:
        before, after = (_sql_text(part) for part in CREDIT_MEMO.split("{pk}"))
        memo = f"{before} || {commission_id} || {after}"
        dependents.append((_credit_entry(commission), {"commission_id": commission_id, "memo": memo}))
    if commission.hold_rule:
        entry, review = _rule_hold_rows(commission)
        before, after = (_sql_text(part) for part in HELD_MEMO.split("{pk}"))
        memo = f"{before} || {commission_id} || {after}"
        dependents.append((entry, {"commission_id": commission_id, "memo": memo}))
        dependents.append((review, {"commission_id": commission_id}))
    dependents.extend((event, {"object_id": commission_id}) for event in events)
    return dependents


def _sql_text(text: str) -> str:
    """A constant as an SQL string literal (quotes doubled; a % doubled, as the driver reads %s)."""
    return "'" + text.replace("'", "''").replace("%", "%%") + "'"


def approve(commission: Commission, now: datetime, *, memo: str = "") -> None:
    """Approves a pending commission the caller has locked, in the caller's transaction: status, ledger credit
    (with `memo`, or the usual one) and commission.approved."""
    commission.status = CommissionStatus.APPROVED
    commission.credited = True
    commission.approved_at = now
    commission.save(update_fields=["status", "credited", "approved_at", "updated_at"])
    ledger_credit(commission, memo)
    commission_event_emit(commission, EventType.COMMISSION_APPROVED)
    commission_status_changed(commission)  # the partner's email (portal), after commit


def commission_approve(*, commission_id: int, now: datetime | None = None) -> bool:
    """Moves one commission out of its hold and credits the partner. False when it is not due, on hold or no
    longer pending (refunded during the hold, or approved by a concurrent run)."""
    now = now or timezone.now()
    with transaction.atomic():
        # skip_locked: a commission being refunded right now is left for the next run.
        commission = (
            Commission.objects.select_for_update(skip_locked=True)
            .filter(pk=commission_id, status=CommissionStatus.PENDING, hold_until__lte=now, held_at__isnull=True)
            .first()
        )
        if commission is None:
            return False
        approve(commission, now)
    return True


class CommissionNotApprovable(Exception):
    """The commission is not pending, or is on hold."""


def commission_approve_early(*, commission_id: int, now: datetime | None = None) -> Commission:
    """Approves a pending commission before its hold period ends and credits the partner. The row is locked (a
    refund arriving at the same moment waits). Raises CommissionNotApprovable when it is not pending or is on
    hold (release it first)."""
    now = now or timezone.now()
    with transaction.atomic():
        commission = Commission.objects.select_for_update().get(pk=commission_id)
        if commission.status != CommissionStatus.PENDING or commission.held_at is not None:
            raise CommissionNotApprovable(commission.status)
        approve(commission, now)
    return commission


def commissions_approve_due(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Approves every commission whose hold period has ended. Returns how many were approved."""
    now = now or timezone.now()
    approved = 0
    while True:
        due = list(
            # Held commissions wait for an owner: left out here, so a backlog of them never stops a run early.
            Commission.objects.filter(status=CommissionStatus.PENDING, hold_until__lte=now, held_at__isnull=True)
            .order_by("hold_until")
            .values_list("pk", flat=True)[:batch_size]
        )
        batch_approved = sum(commission_approve(commission_id=pk, now=now) for pk in due)
        approved += batch_approved
        if len(due) < batch_size or batch_approved == 0:
            approval_job_done(now=now)  # partners' emails of approvals at creation (hold 0)
            return approved
