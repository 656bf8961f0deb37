"""The beat jobs and the operators' command: groups.apply_tiers and groups.award_bonuses, and manage.py
groups_apply (all of them, one kind, one program's bonuses)."""

from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from groups.models import BonusAward, GroupChange
from groups.selectors import default_group
from tiers.tasks import bonuses_award_task, tier_rules_apply_task

from .world import bonus, group, program_link, rule, sale

pytestmark = pytest.mark.django_db


def command(*args: str) -> str:
    out = StringIO()
    call_command("groups_apply", *args, stdout=out, stderr=out)
    return out.getvalue()


def test_beat_runs_both_jobs_hourly():
    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["groups.apply_tiers"] == schedule["groups.award_bonuses"] == 3600.0


def test_the_tasks_run_the_jobs():
    program, link = program_link()
    rule(default_group(program), group(program, "Gold"), threshold=1)
    bonus(program, threshold=1)
    sale(link, when=timezone.now() - timedelta(seconds=1))
    assert bonuses_award_task.delay().get() == 1
    assert tier_rules_apply_task.delay().get() == 1
    assert bonuses_award_task.delay().get() == tier_rules_apply_task.delay().get() == 0


def test_the_command_applies_tiers_and_pays_bonuses():
    program, link = program_link()
    other_program, other_link = program_link()
    rule(default_group(program), group(program, "Gold"), threshold=1)
    bonus(program, threshold=1)
    bonus(other_program, threshold=1)
    sale(link, when=timezone.now() - timedelta(seconds=1))
    sale(other_link, when=timezone.now() - timedelta(seconds=1))

    assert command("--bonuses-only", "--program", str(program.pk)) == "Bonuses paid: 1.\n"
    assert command("--tiers-only") == "Tier rules moved 1 partner(s).\n"
    assert command() == "Tier rules moved 0 partner(s).\nBonuses paid: 1.\n"  # the other program's
    assert command() == "Tier rules moved 0 partner(s).\nBonuses paid: 0.\n"
    assert BonusAward.objects.count() == 2 and GroupChange.objects.filter(reason="tier").count() == 1
    assert command("--bonuses-only", "--program", "999999") == "No program #999999.\n"
