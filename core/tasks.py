import logging
from collections.abc import Callable
from typing import Any

from celery import Task, shared_task
from django.http.response import HttpResponseBase

from .logging import outage_log
from .redis_guard import BrokerSkipped, broker_guard

logger = logging.getLogger("svc.tasks")

# The one retry policy every task runs under. Acknowledged only after it ran, so a worker killed mid-task
# leaves the message for another; any error is retried with exponential backoff (5 s, 10 s, 20 s … capped
# at ten minutes, jittered so a shared outage does not bring every retry back at once), at most eight times.
# Every service a task runs is safe to run again: it locks or claims the rows it changes.
TASK_RETRY_POLICY: dict[str, Any] = {
    "acks_late": True,
    "autoretry_for": (Exception,),
    "retry_backoff": 5,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 8,
    "ignore_result": True,
}


def service_task(name: str, **limits: float) -> Callable[[Callable[..., Any]], Task[..., Any]]:
    """Registers a thin task that runs one service, under the shared retry policy. The name is explicit and
    never derived from the module: beat schedules and messages already queued address the task by it. `limits`:
    a task's own soft_time_limit / time_limit, where the project-wide ones are too long for it."""
    options: dict[str, Any] = {**TASK_RETRY_POLICY, **limits}
    return shared_task(name=name, **options)


def enqueue(task: Task[..., Any], *args: object, countdown: float | None = None) -> bool:
    """Sends a task (to run `countdown` seconds from now, if given); a broker outage is logged and never reaches
    the caller's response. Returns whether it was sent."""
    via_broker = not task.app.conf.task_always_eager
    guard = broker_guard(task.app)
    if via_broker and not guard.available():
        # The broker failed a moment ago: a request does not wait on it again (what was not sent, the sweeps send).
        outage_log(
            logger, "task.enqueue_failed", BrokerSkipped("the broker failed within the last seconds"), task=task.name
        )
        return False
    try:
        if countdown is None:
            task.apply_async(args=args, retry=False)
        else:
            task.apply_async(args=args, retry=False, countdown=countdown)
    except Exception as error:
        if via_broker:
            guard.failed()
        outage_log(logger, "task.enqueue_failed", error, task=task.name)
        return False
    if via_broker:
        guard.succeeded()
    return True


def enqueue_after_response(response: HttpResponseBase, task: Task[..., Any], *args: object) -> None:
    """Sends a task once `response` has been written: the WSGI server (and Django's test client) closes a response
    after its last byte, and runs the closers it holds then. Where tasks run in the process (no Redis,
    CELERY_TASK_ALWAYS_EAGER) the task's work is still no part of the answer's time, so a task whose work depends
    on what was asked (an email sent only to an address that has an account) cannot be told apart by it."""
    # Django's own hook for work at close (a file response closes its file there); not in django-stubs.
    response._resource_closers.append(lambda: enqueue(task, *args))  # type: ignore[attr-defined]
