from celery import shared_task

from .services import commissions_approve_due, refund_notifications_create


@shared_task(
    name="commissions.notify_refund",
    acks_late=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    max_retries=5,
    ignore_result=True,
)
def notify_refund_task(commission_id: int, step: int, was_paid_out: bool) -> int:
    return refund_notifications_create(commission_id=commission_id, step=step, was_paid_out=was_paid_out)


@shared_task(name="commissions.approve_due", acks_late=True, ignore_result=True)
def approve_due_task() -> int:
    return commissions_approve_due()
