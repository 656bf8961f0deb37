from django.conf import settings

from core.tasks import service_task

from .delivery import delivery_attempt
from .dispatch import fan_out_request_taken
from .fanout import event_fan_out, webhook_events_prune, webhooks_sweep
from .notices import endpoint_disabled_notify


@service_task("webhooks.fan_out")
def webhook_event_fan_out_task(event_id: int) -> int:
    return len(event_fan_out(event_id=event_id))


# A receiver that trickles its answer a byte at a time defeats httpx's per-read timeout; the soft limit stops the
# attempt (recorded as timed out, webhooks.delivery) before its lease runs out and another worker could send it.
# Tight, since the lease bounds how long a delivery whose worker was killed waits (webhooks.delivery).
@service_task(
    "webhooks.deliver",
    soft_time_limit=settings.WEBHOOK_TIMEOUT_SECONDS + 3,
    time_limit=settings.WEBHOOK_TIMEOUT_SECONDS + 6,
)
def webhook_delivery_attempt_task(delivery_id: int) -> bool:
    return delivery_attempt(delivery_id=delivery_id) is not None


# Requested when events an endpoint may want commit (webhooks.events): one at a time, it fans out every event written
# until it starts and queues what is due, as the sweep does.
@service_task("webhooks.fan_out_pending")
def webhook_events_fan_out_pending_task() -> int:
    fan_out_request_taken()
    fanned, queued = webhooks_sweep()
    return fanned + queued


@service_task("webhooks.sweep")
def webhooks_sweep_task() -> int:
    fanned, queued = webhooks_sweep()
    return fanned + queued


@service_task("webhooks.prune_events")
def webhook_events_prune_task() -> int:
    return webhook_events_prune()


@service_task("webhooks.notify_endpoint_disabled")
def webhook_endpoint_disabled_notify_task(endpoint_id: int) -> int:
    return endpoint_disabled_notify(endpoint_id=endpoint_id)
