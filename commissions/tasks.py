from core.tasks import service_task

from .approval import commissions_approve_due
from .outbox import notification_outbox_deliver, notification_outbox_deliver_pending, refund_notifications_create

# Registered names predate the service names; they stay, because beat and queued messages use them.


@service_task("commissions.deliver_notification")
def notification_outbox_deliver_task(outbox_id: int) -> bool:
    return notification_outbox_deliver(outbox_id=outbox_id)


@service_task("commissions.deliver_pending_notifications")
def notification_outbox_deliver_pending_task() -> int:
    return notification_outbox_deliver_pending()


@service_task("commissions.notify_refund")
def refund_notifications_create_task(commission_id: int, step: int, was_paid_out: bool) -> int:
    """Kept for tasks a broker still holds from before the outbox; refunds now send deliver_notification."""
    return refund_notifications_create(commission_id=commission_id, step=step, was_paid_out=was_paid_out)


@service_task("commissions.approve_due")
def commissions_approve_due_task() -> int:
    return commissions_approve_due()
