from core.tasks import service_task

from .emails import commission_email_send


@service_task("portal.commission_email")
def commission_email_task(commission_id: int, status: str, step: int = 0) -> bool:
    return commission_email_send(commission_id=commission_id, status=status, step=step)
