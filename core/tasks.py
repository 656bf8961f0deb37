import logging

from celery import Task

logger = logging.getLogger("svc.tasks")


def enqueue(task: Task, *args: object) -> None:
    """Sends a task; a broker outage is logged and never reaches the caller's response."""
    try:
        task.apply_async(args=args, retry=False)
    except Exception:
        logger.exception("task.enqueue_failed", extra={"task": task.name})
