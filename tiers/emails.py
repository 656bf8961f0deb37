"""The email a partner gets when a tier rule moves them to another group. Transactional, as the payout emails are:
sent to the partner's portal account (a partner without one has nowhere to read it), after the move commits,
through a task; nothing about it reaches the move."""

import logging

from django.conf import settings
from django.core.mail import EmailMessage

from core.money import money
from core.tasks import service_task
from core.urls import public_url
from groups.models import GroupChange, Metric

logger = logging.getLogger("svc.groups")

SUBJECT = "{program}: you are now in {to_group}"
BODY = """{program} moved you from {from_group} to {to_group}: your {figure_words} {period_words}.

The commissions you earn from now on are paid under {to_group}'s terms; those already earned keep theirs.

See your terms and commissions: {portal}

You get this email because you are a partner of {program}."""
PROMOTED = "reached {threshold}"
DEMOTED = "stayed below {threshold}"


def _amount(metric: str, value: int) -> str:
    return f"{value} sale{'s' if value != 1 else ''}" if metric == Metric.SALES else f"{money(value)} in revenue"


def _period_words(key: str) -> str:
    return "in all" if key == "all" else f"in {key}"


def group_change_email_send(*, change_id: int) -> bool:
    """Emails the partner of a tier move; False when nobody is written to (no such change, not a rule's move,
    no account or an inactive one)."""
    change = (
        GroupChange.objects.select_related("program", "partner__account", "from_group", "to_group", "rule")
        .filter(pk=change_id)
        .first()
    )
    if change is None or change.rule is None or change.to_group is None:
        return False
    account = change.partner.account
    if account is None or not account.is_active:
        return False
    rule = change.rule
    figure = _amount(rule.metric, change.figure or 0)
    reached = PROMOTED if rule.direction == rule.Direction.PROMOTE else DEMOTED
    words = {
        "program": change.program.name,
        "from_group": change.from_group.name if change.from_group else "your group",
        "to_group": change.to_group.name,
        "figure_words": f"{figure} {reached.format(threshold=_amount(rule.metric, rule.threshold))}",
        "period_words": _period_words(change.period_key),
        "portal": public_url(None, "/portal/"),
    }
    EmailMessage(
        subject=SUBJECT.format(**words),
        body=BODY.format(**words),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[account.email],
    ).send()
    logger.info("groups.tier_email_sent", extra={"change_id": change.pk})
    return True


@service_task("groups.group_change_email")
def group_change_email_task(change_id: int) -> bool:
    return group_change_email_send(change_id=change_id)
