from django.conf import settings

from core.tasks import service_task

from .reconciler import commissions_reconcile
from .retention import raw_clicks_prune
from .rollups import rollups_update
from .stripe.events import processor_event_attempt


@service_task("tracking.process_processor_event")
def processor_event_attempt_task(event_pk: int) -> str:
    return processor_event_attempt(event_pk=event_pk)


# Registered under its old name (the reconciler moved from commissions): beat and queued messages use it.
@service_task("commissions.reconcile")
def commissions_reconcile_task() -> int:
    return commissions_reconcile()


@service_task("tracking.update_rollups")
def rollups_update_task() -> int:
    return sum(rollups_update().folded.values())


@service_task("tracking.prune_clicks")
def raw_clicks_prune_task() -> int:
    days = settings.RAW_CLICK_RETENTION_DAYS
    return raw_clicks_prune(older_than_days=days).deleted if days else 0
