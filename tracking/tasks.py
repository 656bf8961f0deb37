from celery import shared_task

from .stripe.events import processor_event_failed, processor_event_process


@shared_task(
    name="tracking.process_processor_event",
    bind=True,
    acks_late=True,
    max_retries=8,
    ignore_result=True,
)
def process_processor_event_task(self, event_pk: int) -> str:
    try:
        return processor_event_process(event_pk=event_pk).status
    except Exception as exc:
        processor_event_failed(event_pk=event_pk, error=f"{type(exc).__name__}: {exc}")
        raise self.retry(exc=exc, countdown=min(600, 5 * 2**self.request.retries)) from exc
