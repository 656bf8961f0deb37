from core.tasks import enqueue, service_task

from .events import billing_event_attempt, billing_events_stale


@service_task("billing.process_event")
def billing_event_attempt_task(event_pk: int) -> str:
    return billing_event_attempt(event_pk=event_pk)


@service_task("billing.sweep_events")
def billing_events_sweep_task() -> int:
    """Queues again every event whose task was lost; returns how many (processing is once per event anyway)."""
    stale = billing_events_stale()
    for pk in stale:
        enqueue(billing_event_attempt_task, pk)
    return len(stale)
