from datetime import timedelta

import pytest
from django.utils import timezone

from cli_api.models import CliLoginSession, CliToken
from cli_api.services import login_sessions_purge
from cli_api.tasks import login_sessions_purge_task
from config.settings import CELERY_BEAT_SCHEDULE

from .conftest import start_login

pytestmark = pytest.mark.django_db


def test_sessions_a_day_past_expiry_are_deleted_and_their_tokens_kept(client, account, login_token):
    start_login(client)
    start_login(client)
    old, fresh = CliLoginSession.objects.order_by("pk")
    CliLoginSession.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1, seconds=1))
    tokens_before = CliToken.objects.count()
    assert login_sessions_purge() == 1
    assert list(CliLoginSession.objects.values_list("pk", flat=True)) == [fresh.pk]
    assert CliToken.objects.count() == tokens_before


def test_recently_expired_sessions_stay_so_a_late_poll_still_reads_expired(client, account):
    start_login(client)
    CliLoginSession.objects.update(expires_at=timezone.now() - timedelta(hours=1))
    assert login_sessions_purge() == 0 and CliLoginSession.objects.count() == 1


def test_beat_runs_the_purge_every_hour():
    entry = CELERY_BEAT_SCHEDULE["purge-cli-login-sessions"]
    assert entry["task"] == login_sessions_purge_task.name and entry["schedule"] == 3600.0
    assert login_sessions_purge_task.delay().get() == 0
