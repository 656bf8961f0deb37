"""Events and deliveries for the webhook tests, made through the webhooks services."""

from typing import Any

from programs.models import Program
from webhooks.events import event_emit
from webhooks.fanout import event_fan_out
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent


def emit(program: Program, type: str = "sale.created", *, livemode: bool = True, **data: Any) -> WebhookEvent:
    return event_emit(
        program_id=program.pk, type=type, livemode=livemode, data={"amount_cents": 4900, **data}, object_id=7
    )


def delivery_of(event: WebhookEvent, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Fans the event out and returns its delivery to the endpoint."""
    event_fan_out(event_id=event.pk)
    return WebhookDelivery.objects.get(event=event, endpoint=endpoint)


def new_delivery(program: Program, endpoint: WebhookEndpoint, type: str = "sale.created") -> WebhookDelivery:
    return delivery_of(emit(program, type), endpoint)
