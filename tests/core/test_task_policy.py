"""Every task runs one service under the one retry policy of core.tasks, under the name beat and queued messages
already use."""

import pytest

from commissions.tasks import commissions_approve_due_task
from config import celery_app
from config.settings import CELERY_BEAT_SCHEDULE
from core.tasks import TASK_RETRY_POLICY

# Names messages may still carry in a broker: renaming one would strand them.
REGISTERED_NAMES = {
    "billing.process_event",
    "billing.sweep_events",
    "commissions.deliver_notification",
    "commissions.deliver_pending_notifications",
    "commissions.notify_refund",
    "commissions.approve_due",
    "commissions.reconcile",
    "tracking.process_processor_event",
    "tracking.update_rollups",
    "tracking.prune_clicks",
    "cli_api.purge_login_sessions",
    "agent_api.purge_idempotency_records",
    "programs.purge_request_log",
    "webhooks.fan_out",
    "webhooks.fan_out_pending",
    "webhooks.deliver",
    "webhooks.sweep",
    "webhooks.prune_events",
    "webhooks.notify_endpoint_disabled",
    "portal.commission_email",
    "dashboard.password_reset_email",
    "portal.password_reset_email",
    "payouts.send",
    "payouts.reconcile",
    "payouts.email",
    "payouts.scheduled_runs",
    "imports.import_run",
    "imports.prune_uploads",
    "core.verify_integrity",
    "groups.apply_tiers",
    "groups.award_bonuses",
    "groups.group_change_email",
}


PROJECT_APPS = {
    "core",
    "billing",
    "commissions",
    "tracking",
    "cli_api",
    "agent_api",
    "programs",
    "webhooks",
    "portal",
    "payouts",
    "imports",
    "dashboard",
    "groups",
}


def project_tasks():
    celery_app.loader.import_default_modules()
    return {name: task for name, task in celery_app.tasks.items() if name.split(".")[0] in PROJECT_APPS}


def test_every_task_keeps_its_registered_name_and_beat_addresses_registered_tasks():
    tasks = project_tasks()
    assert set(tasks) == REGISTERED_NAMES
    assert {entry["task"] for entry in CELERY_BEAT_SCHEDULE.values()} <= REGISTERED_NAMES


@pytest.mark.parametrize("name", sorted(REGISTERED_NAMES))
def test_every_task_runs_under_the_shared_retry_policy(name):
    task = project_tasks()[name]
    assert {option: getattr(task, option) for option in TASK_RETRY_POLICY} == TASK_RETRY_POLICY
    assert task.__name__.endswith("_task")


@pytest.mark.django_db
def test_a_periodic_task_that_fails_is_retried(monkeypatch):
    calls = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("database went away")
        return 3

    monkeypatch.setattr("commissions.tasks.commissions_approve_due", flaky)
    assert commissions_approve_due_task.delay().get() == 3 and len(calls) == 2
