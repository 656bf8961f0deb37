"""Delivery log rows for the webhooks pages' tests: an event, its delivery to an endpoint, and attempts."""

from datetime import datetime

from django.utils import timezone

from webhooks.events import event_id_generate
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent


def delivery_make(
    endpoint: WebhookEndpoint,
    *,
    type: str = "sale.created",
    status: str = DeliveryStatus.FAILED,
    at: datetime | None = None,
    attempts: int = 1,
    program_id: int | None = None,
    livemode: bool = True,
) -> WebhookDelivery:
    """A delivery of a new event (made `at`, default now) with `attempts` logged attempts; the last one succeeded
    when the delivery did, the others answered 500."""
    at = at or timezone.now()
    program_id = program_id or endpoint.program_id
    assert program_id is not None, "a workspace-wide endpoint's delivery names its event's program"
    event = WebhookEvent.objects.create(
        public_id=event_id_generate(),
        program_id=program_id,
        type=type,
        livemode=livemode,
        data={"amount_cents": 4900},
        created_at=at,
        fanned_out_at=at,
    )
    succeeded = status == DeliveryStatus.SUCCEEDED
    delivery = WebhookDelivery.objects.create(
        event=event,
        endpoint=endpoint,
        status=status,
        attempts=attempts,
        scheduled_attempts=attempts,
        last_status_code=(200 if succeeded else 500) if attempts else None,
        last_error="" if succeeded or not attempts else "HTTP 500",
        delivered_at=at if succeeded else None,
        next_attempt_at=at if status == DeliveryStatus.PENDING else None,
        created_at=at,
    )
    for number in range(1, attempts + 1):
        ok = succeeded and number == attempts
        WebhookAttempt.objects.create(
            delivery=delivery,
            number=number,
            started_at=at,
            status_code=200 if ok else 500,
            latency_ms=40 + number,
            response_excerpt="ok" if ok else f"upstream broke {number}",
            error="" if ok else "HTTP 500",
            succeeded=ok,
        )
    return delivery
