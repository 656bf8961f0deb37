from core.tasks import service_task

from .emails import payout_email_send
from .stripe_rail import payout_send, payouts_reconcile


@service_task("payouts.send")
def payout_send_task(payout_id: int) -> str:
    return payout_send(payout_id=payout_id)


@service_task("payouts.reconcile")
def payouts_reconcile_task() -> dict[str, int]:
    return payouts_reconcile()


@service_task("payouts.email")
def payout_email_task(payout_id: int, event: str) -> bool:
    return payout_email_send(payout_id=payout_id, event=event)


@service_task("payouts.scheduled_runs")
def payouts_scheduled_runs_task() -> int:
    from .services import scheduled_runs

    return len(scheduled_runs())
