"""Soft time limits that stop only the task they were set for (celery 5.7.0, billiard 4.3.2).

The prefork pool's parent keeps a timer per task and, when it fires while the task's result has not reached it,
signals the child process (SIGUSR1), whose handler raises SoftTimeLimitExceeded. While the worker reconnects to
the broker its event loop stops reading the children's results; tasks finished meanwhile still look running when
the loop resumes, their timers fire first, and the signal reaches a child that is idle (the exception escapes its
loop: the process exits and is replaced) or already running another task (which is interrupted). Two guards:
- the parent (TaskPool, CELERY_WORKER_POOL) puts a timer off by a second while the task's process has a message
  waiting in its result pipe, which the loop then reads: a finished task is no longer timed;
- the child's handler raises only while a task runs in it and has run for at least its soft limit."""

import select
import time
from typing import Any

import billiard.pool
from celery.concurrency import asynpool, prefork
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import task_postrun, task_prerun

# A timer fires on the parent's clock and a task starts on the child's: a signal this close to the limit is the
# task's own.
CLOCK_SLACK_SECONDS = 1.0

# (when the task running in this process started, its soft limit in seconds or None), or None when idle.
_running: tuple[float, float | None] | None = None


def _soft_limit_of(task: Any) -> float | None:
    limits = getattr(task.request, "timelimit", None) or (None, None)
    soft = limits[1] if len(limits) > 1 else None
    if soft is None:
        soft = task.soft_time_limit
    if soft is None:
        soft = task.app.conf.task_soft_time_limit
    return float(soft) if soft else None


def task_started(sender: Any = None, task: Any = None, **_: Any) -> None:
    global _running
    _running = (time.monotonic(), _soft_limit_of(task or sender))


def task_ended(**_: Any) -> None:
    global _running
    _running = None


def soft_timeout_handler(signum: int, frame: Any) -> None:
    running = _running
    if running is None:
        return  # idle: the limit of a task that finished while the parent was not reading
    started, soft = running
    if soft is not None and time.monotonic() - started < soft - CLOCK_SLACK_SECONDS:
        return  # the limit of the task this process ran before
    raise SoftTimeLimitExceeded()


# The stubs (celery-types) leave out the pool's private members used here.
_AsynPoolBase: Any = asynpool.AsynPool


class AsynPool(_AsynPoolBase):
    _loop: Any = None

    def register_with_event_loop(self, hub: Any) -> None:
        self._loop = hub
        super().register_with_event_loop(hub)

    def _on_soft_timeout(self, job: Any, soft: float, hard: float, hub: Any) -> None:
        if self._result_waiting(job):
            self._tref_for_id[job] = hub.call_later(1.0, self._on_soft_timeout, job, soft, hard, hub)
            return
        super()._on_soft_timeout(job, soft, hard, hub)

    def _on_hard_timeout(self, job: Any) -> None:
        if self._loop is not None and self._result_waiting(job):
            self._tref_for_id[job] = self._loop.call_later(1.0, self._on_hard_timeout, job)
            return
        super()._on_hard_timeout(job)

    def _result_waiting(self, job: Any) -> bool:
        """Whether the process that ran the job has written something its parent has not read yet."""
        result = self._cache.get(job)
        pid = getattr(result, "_worker_pid", None)
        process = next((process for process in self._pool if process.pid == pid), None) if pid else None
        descriptor = getattr(process, "outqR_fd", None)
        if descriptor is None:
            return False
        try:
            readable, _, _ = select.select([descriptor], [], [], 0)
        except (OSError, ValueError):
            return False
        return bool(readable)


class TaskPool(prefork.TaskPool):
    Pool = AsynPool


def install() -> None:
    """config/celery.py: billiard installs its module's handler in each child after forking it."""
    billiard.pool.soft_timeout_sighandler = soft_timeout_handler
    task_prerun.connect(task_started, weak=False)
    task_postrun.connect(task_ended, weak=False)
