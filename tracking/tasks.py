from core.tasks import service_task

from .stripe.events import processor_event_attempt


@service_task("tracking.process_processor_event")
def processor_event_attempt_task(event_pk: int) -> str:
    return processor_event_attempt(event_pk=event_pk)
