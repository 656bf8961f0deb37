"""The refund notifications, and their delivery from the outbox (see NotificationOutbox).

Delivering a row means creating its Notification rows. Claiming the row (locked, skip_locked, still
undelivered), creating the notifications and marking it delivered commit together, so a row is delivered
exactly once however many tasks, sweeps and operators try at the same time; a failure rolls all of it back
and leaves the row for the next sweep."""

import logging

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .models import Commission, CommissionStatus, Notification, NotificationOutbox

logger = logging.getLogger("svc.commissions")


def refund_notifications_create(
    *, commission_id: int, step: int, was_paid_out: bool, reversed_: bool | None = None, reason: str | None = None
) -> int:
    """In-app notice to the partner; a manual-review warning to the advertiser when the commission had
    already been paid out. Idempotent per refund step, so a retried task never notifies twice.
    reversed_ and reason describe the refund step (the outbox row keeps them); without them the
    commission's current state is used."""
    commission = Commission.objects.select_related("program", "partner").get(pk=commission_id)
    if reversed_ is None:
        reversed_ = commission.status == CommissionStatus.REVERSED
    if reason is None:
        reason = commission.refund_reason
    kind = Notification.Kind.COMMISSION_REVERSED if reversed_ else Notification.Kind.COMMISSION_REFUNDED
    reason_text = f" Reason: {reason}." if reason else ""
    wanted = [
        Notification(
            audience=Notification.Audience.PARTNER,
            kind=kind,
            partner_id=commission.partner_id,
            commission=commission,
            dedupe_key=f"{commission_id}:{step}",
            message=(
                f"Commission #{commission_id} in {commission.program.name} was "
                f"{'reversed' if reversed_ else 'reduced by a partial refund'}.{reason_text}"
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
                    f"was refunded. Review it: the partner's balance is now reduced.{reason_text}"
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


def notification_outbox_deliver(*, outbox_id: int) -> bool:
    """Delivers one outbox row. False when there is nothing to do: already delivered, being delivered
    by someone else right now, or gone with its commission. A delivery error is recorded on the row
    (attempts, last_error) and raised."""
    try:
        with transaction.atomic():
            row = (
                NotificationOutbox.objects.select_for_update(skip_locked=True)
                .filter(pk=outbox_id, delivered_at__isnull=True)
                .first()
            )
            if row is None:
                return False
            refund_notifications_create(
                commission_id=row.commission_id,
                step=row.refund_step,
                was_paid_out=row.was_paid_out,
                reversed_=row.reversed,
                reason=row.refund_reason,
            )
            row.delivered_at = timezone.now()
            row.attempts += 1
            row.last_error = ""
            row.save(update_fields=["delivered_at", "attempts", "last_error"])
    except Exception as error:
        NotificationOutbox.objects.filter(pk=outbox_id, delivered_at__isnull=True).update(
            attempts=F("attempts") + 1, last_error=f"{type(error).__name__}: {error}"[:2000]
        )
        raise
    return True


def notification_outbox_deliver_pending(*, batch_size: int = 500) -> int:
    """Delivers every undelivered outbox row, oldest first; a row that fails is logged and left for the
    next run without stopping the others. Returns how many rows this run delivered."""
    delivered = 0
    after = 0
    while True:
        ids = list(
            NotificationOutbox.objects.filter(delivered_at__isnull=True, pk__gt=after)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch_size]
        )
        for outbox_id in ids:
            try:
                delivered += notification_outbox_deliver(outbox_id=outbox_id)
            except Exception:
                logger.exception("outbox.delivery_failed", extra={"outbox_id": outbox_id})
        if len(ids) < batch_size:
            return delivered
        after = ids[-1]
