"""Queuing the webhooks tasks from the services they run. webhooks.tasks imports those services (the fan-out,
the delivery), so the services cannot import it back without a cycle: WebhooksConfig.ready(), where Django wants
late imports, hands the tasks over here once every module is loaded."""

from typing import Any

from celery import Task
from django.conf import settings

from core.tasks import enqueue

FAN_OUT = "fan_out"
FAN_OUT_PENDING = "fan_out_pending"
DELIVER = "deliver"
NOTIFY_ENDPOINT_DISABLED = "notify_endpoint_disabled"

# Sent to WEBHOOK_QUEUE; every other task (the sweep and the pruning that beat sends included) to the default queue.
WEBHOOK_QUEUE_TASKS = frozenset({"webhooks.fan_out", "webhooks.fan_out_pending", "webhooks.deliver"})

_tasks: dict[str, Task[..., Any]] = {}


def tasks_register(tasks: dict[str, Task[..., Any]]) -> None:
    _tasks.update(tasks)


def queue(task: str, *args: object, countdown: float | None = None) -> bool:
    """Sends the app's task (FAN_OUT, FAN_OUT_PENDING, DELIVER, NOTIFY_ENDPOINT_DISABLED) as core.tasks.enqueue
    does. Returns whether it was sent."""
    return enqueue(_tasks[task], *args, countdown=countdown)


def task_route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **rest: Any) -> dict[str, str] | None:
    """CELERY_TASK_ROUTES: the webhook tasks to WEBHOOK_QUEUE, read when each is sent (the tests' workers each
    consume a queue of their own)."""
    if name in WEBHOOK_QUEUE_TASKS:
        return {"queue": settings.WEBHOOK_QUEUE}
    return None
