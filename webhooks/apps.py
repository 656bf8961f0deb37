import logging
from typing import Any

from celery.signals import task_received
from django.apps import AppConfig


def delivery_message_received(request: Any = None, **_: Any) -> None:
    """A worker received a message (before running it): a delivery's claim is cut short (webhooks.dispatch)."""
    if request is None or request.name != "webhooks.deliver" or not request.args:
        return
    from .dispatch import claim_received

    try:
        claim_received(delivery_id=int(request.args[0]), eta=request.eta)
    except Exception:
        # The claim then runs its whole length; the message itself is unaffected.
        logging.getLogger("svc.webhooks").exception("webhooks.claim_receive_failed")


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .queue import DELIVER, FAN_OUT, FAN_OUT_PENDING, NOTIFY_ENDPOINT_DISABLED, tasks_register
        from .tasks import (
            webhook_delivery_attempt_task,
            webhook_endpoint_disabled_notify_task,
            webhook_event_fan_out_task,
            webhook_events_fan_out_pending_task,
        )

        task_received.connect(delivery_message_received, weak=False)
        tasks_register(
            {
                FAN_OUT: webhook_event_fan_out_task,
                FAN_OUT_PENDING: webhook_events_fan_out_pending_task,
                DELIVER: webhook_delivery_attempt_task,
                NOTIFY_ENDPOINT_DISABLED: webhook_endpoint_disabled_notify_task,
            }
        )
