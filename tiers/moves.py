"""Tier rules: the beat job moves partners between groups by their figures (tiers.figures).

A promote rule moves a partner of its group whose figure in the current period so far reaches the threshold; a
demote rule moves one whose figure in the last complete period stayed below it, if they were in the group for the
whole of that period (a partner promoted into it this month is not judged by last month, when they were not in
it). Each move goes through groups.services.partner_move (the enrolment locked, a GroupChange naming the rule, the
partner.group_changed webhook), whose constraint lets a rule move a partner once per period whatever runs at the
same time; the partner is then emailed (tiers.emails)."""

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.tasks import enqueue
from groups.models import GroupChange, TierRule
from groups.periods import PeriodBounds, period_current, period_last_complete
from groups.services import Move, partner_move
from programs.models import PartnerProgram

from .emails import group_change_email_task
from .figures import Figures, partner_figures
from .milestones import enrolment_lock, group_enrolments, in_group

logger = logging.getLogger("svc.groups")


@dataclass(frozen=True)
class TierRun:
    moved: int = 0


def _judged(rule: TierRule, now: datetime) -> PeriodBounds:
    if rule.direction == TierRule.Direction.PROMOTE:
        return period_current(rule.period, now)
    return period_last_complete(rule.period, now)


def _due(rule: TierRule, figure: int) -> bool:
    if rule.direction == TierRule.Direction.PROMOTE:
        return figure >= rule.threshold
    return figure < rule.threshold


def _candidates(rule: TierRule, bounds: PeriodBounds) -> dict[int, int]:
    """The rule's group's active partners the rule would move, with their figures: reached (promote) or not
    reached (demote, partners with no sale included)."""
    program_id = rule.group.program_id
    figures = partner_figures(program_id=program_id, period_key=bounds.key)
    members = PartnerProgram.objects.filter(group_enrolments(rule.group), partner__is_active=True)
    if rule.direction == TierRule.Direction.DEMOTE:
        assert bounds.start is not None
        members = members.filter(created_at__lt=bounds.start)
        # In the group for the whole period: no move of theirs since it began.
        moved = GroupChange.objects.filter(program_id=program_id, created_at__gte=bounds.start).values("partner_id")
        members = members.exclude(partner_id__in=moved)
    due = {}
    for partner_id in members.values_list("partner_id", flat=True):
        figure = figures.get(partner_id, Figures()).of(rule.metric)
        if _due(rule, figure):
            due[partner_id] = figure
    return due


def tier_rule_move(*, rule: TierRule, partner_id: int, bounds: PeriodBounds, figure: int) -> GroupChange | None:
    """Moves the partner by the rule when, under the enrolment's lock, they are still in the rule's group (a move
    by an owner or another rule meanwhile is left as it is). None when not moved: not in the group any more, or
    moved by this rule for this period already (partner_move's constraint)."""
    with transaction.atomic():
        enrolment = enrolment_lock(program_id=rule.group.program_id, partner_id=partner_id)
        if enrolment is None or not in_group(enrolment, rule.group):
            return None
        change = partner_move(
            enrolment=enrolment,
            group=rule.target,
            move=Move(reason=GroupChange.Reason.TIER, rule=rule, period_key=bounds.key, figure=figure),
        )
        if change is not None:
            change_id = change.pk
            transaction.on_commit(lambda: enqueue(group_change_email_task, change_id), robust=True)
    return change


def tier_rules_apply(now: datetime | None = None) -> TierRun:
    """Applies every active tier rule of every program (the beat task groups.apply_tiers). Rules are taken in
    order (program, promote before demote, id), each reading the groups as the previous ones left them."""
    now = now or timezone.now()
    moved = 0
    rules = (
        TierRule.objects.filter(is_active=True, group__program__isnull=False)
        .select_related("group", "target")
        .order_by("group__program_id", "-direction", "pk")  # "promote" sorts after "demote": descending first
    )
    for rule in rules:
        if rule.target.program_id != rule.group.program_id:
            continue  # never across programs (the rule's writes refuse it; a row made otherwise is ignored)
        bounds = _judged(rule, now)
        for partner_id, figure in sorted(_candidates(rule, bounds).items()):
            if tier_rule_move(rule=rule, partner_id=partner_id, bounds=bounds, figure=figure) is not None:
                moved += 1
                logger.info(
                    "groups.tier_moved",
                    extra={"rule_id": rule.pk, "partner_id": partner_id, "period": bounds.key, "figure": figure},
                )
    return TierRun(moved=moved)
