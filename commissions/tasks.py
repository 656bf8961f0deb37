from celery import shared_task

from .outbox import notification_outbox_deliver, notification_outbox_deliver_pending
from .reconciler import commissions_reconcile
from .services import commissions_approve_due, refund_notifications_create


@shared_task(
    name="commissions.deliver_notification",
    acks_late=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    max_retries=5,
    ignore_result=True,
)
def deliver_notification_task(outbox_id: int) -> bool:
    return notification_outbox_deliver(outbox_id=outbox_id)


@shared_task(name="commissions.deliver_pending_notifications", acks_late=True, ignore_result=True)
def deliver_pending_notifications_task() -> int:
    return notification_outbox_deliver_pending()


@shared_task(
    name="commissions.notify_refund",
    acks_late=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    max_retries=5,
    ignore_result=True,
)
def notify_refund_task(commission_id: int, step: int, was_paid_out: bool) -> int:
    """Kept for tasks a broker still holds from before the outbox; refunds now send deliver_notification."""
    return refund_notifications_create(commission_id=commission_id, step=step, was_paid_out=was_paid_out)


@shared_task(name="commissions.approve_due", acks_late=True, ignore_result=True)
def approve_due_task() -> int:
    return commissions_approve_due()


@shared_task(name="commissions.reconcile", acks_late=True, ignore_result=True)
def reconcile_commissions_task() -> int:
    return commissions_reconcile()
