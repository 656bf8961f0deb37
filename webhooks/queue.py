"""Queuing the webhooks tasks from the services they run. webhooks.tasks imports those services (the fan-out,
the delivery), so the services cannot import it back without a cycle: WebhooksConfig.ready(), where Django wants
late imports, hands the tasks over here once every module is loaded."""

from celery import Task

from core.tasks import enqueue

FAN_OUT = "fan_out"
DELIVER = "deliver"
NOTIFY_ENDPOINT_DISABLED = "notify_endpoint_disabled"

_tasks: dict[str, Task] = {}


def tasks_register(tasks: dict[str, Task]) -> None:
    _tasks.update(tasks)


def queue(task: str, *args: object, countdown: float | None = None) -> None:
    """Sends the app's task (FAN_OUT, DELIVER, NOTIFY_ENDPOINT_DISABLED) as core.tasks.enqueue does."""
    enqueue(_tasks[task], *args, countdown=countdown)
