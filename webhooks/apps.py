from django.apps import AppConfig


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

        tasks_register(
            {
                FAN_OUT: webhook_event_fan_out_task,
                FAN_OUT_PENDING: webhook_events_fan_out_pending_task,
                DELIVER: webhook_delivery_attempt_task,
                NOTIFY_ENDPOINT_DISABLED: webhook_endpoint_disabled_notify_task,
            }
        )
