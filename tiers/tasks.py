"""Every groups task, for the worker's autodiscovery: the beat jobs that apply tier rules and pay milestone bonuses
(config.settings CELERY_BEAT_SCHEDULE), and the tier email, declared beside its sender."""

from core.tasks import service_task

from .emails import group_change_email_task
from .milestones import bonuses_award_all
from .moves import tier_rules_apply

__all__ = ["bonuses_award_task", "group_change_email_task", "tier_rules_apply_task"]


@service_task("groups.apply_tiers")
def tier_rules_apply_task() -> int:
    return tier_rules_apply().moved


@service_task("groups.award_bonuses")
def bonuses_award_task() -> int:
    return bonuses_award_all().awarded
