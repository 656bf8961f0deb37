"""Every payouts task, for the worker's autodiscovery. Sending and reconciling are declared beside the Stripe rail and
the email beside its sender, because the services that queue them sit above this module."""

from core.tasks import service_task

from .emails import payout_email_task
from .services import scheduled_runs
from .stripe_rail import payout_send_task, payouts_reconcile_task

__all__ = ["payout_email_task", "payout_send_task", "payouts_reconcile_task", "payouts_scheduled_runs_task"]


@service_task("payouts.scheduled_runs")
def payouts_scheduled_runs_task() -> int:
    return len(scheduled_runs())
