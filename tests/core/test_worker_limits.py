"""A pool process raises SoftTimeLimitExceeded only for the task it is running, once that task has run for its soft
limit: the signal of a timer left from a task that finished while the worker reconnected (core/worker_limits.py)
reaches an idle process, or one already running another task, and stops nothing. The served fault drill
(tests/served/test_faults_served.py) checks the same on a real worker whose broker goes away."""

import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from config import celery_app
from core import worker_limits


def fake_task(soft: float | None) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(timelimit=None), soft_time_limit=soft, app=celery_app)


@pytest.fixture
def clock(monkeypatch) -> Iterator[list[float]]:
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    yield now
    worker_limits.task_ended()


def test_an_idle_process_ignores_the_signal(clock):
    worker_limits.task_ended()
    worker_limits.soft_timeout_handler(10, None)  # nothing raised


def test_a_task_younger_than_its_limit_is_not_stopped_by_its_predecessors_timer(clock):
    worker_limits.task_started(task=fake_task(18))
    clock[0] += 5
    worker_limits.soft_timeout_handler(10, None)  # nothing raised


def test_a_task_that_reached_its_limit_is_stopped(clock):
    worker_limits.task_started(task=fake_task(18))
    clock[0] += 18
    with pytest.raises(SoftTimeLimitExceeded):
        worker_limits.soft_timeout_handler(10, None)


def test_a_per_call_limit_wins_over_the_tasks_own(clock):
    task = fake_task(18)
    task.request.timelimit = (30, 3)
    worker_limits.task_started(task=task)
    clock[0] += 3
    with pytest.raises(SoftTimeLimitExceeded):
        worker_limits.soft_timeout_handler(10, None)


def test_the_project_wide_limit_applies_to_a_task_without_its_own(clock):
    worker_limits.task_started(task=fake_task(None))
    clock[0] += celery_app.conf.task_soft_time_limit - 5
    worker_limits.soft_timeout_handler(10, None)
    clock[0] += 5
    with pytest.raises(SoftTimeLimitExceeded):
        worker_limits.soft_timeout_handler(10, None)


def test_the_worker_runs_the_guarded_pool_and_handler():
    assert celery_app.conf.worker_pool == "core.worker_limits:TaskPool"
    import billiard.pool

    assert billiard.pool.soft_timeout_sighandler is worker_limits.soft_timeout_handler
