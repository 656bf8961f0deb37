from core.tasks import service_task

from .reconciler import commissions_reconcile
from .stripe.events import processor_event_attempt


@service_task("tracking.process_processor_event")
def processor_event_attempt_task(event_pk: int) -> str:
    return processor_event_attempt(event_pk=event_pk)


# Registered under its old name (the reconciler moved from commissions): beat and queued messages use it.
@service_task("commissions.reconcile")
def commissions_reconcile_task() -> int:
    return commissions_reconcile()
