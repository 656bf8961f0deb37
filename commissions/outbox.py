"""Delivery of the refund notifications recorded in the outbox (see NotificationOutbox).

Delivering a row means creating its Notification rows. Claiming the row (locked, skip_locked, still
undelivered), creating the notifications and marking it delivered commit together, so a row is delivered
exactly once however many tasks, sweeps and operators try at the same time; a failure rolls all of it back
and leaves the row for the next sweep."""

import logging

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from . import services
from .models import NotificationOutbox

logger = logging.getLogger("svc.commissions")


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
            services.refund_notifications_create(
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
