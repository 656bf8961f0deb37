"""Which clicks count, and reads of the clicks the fraud rules marked (the dashboard's Review tab, the agent API)."""

from django.db import connection
from django.db.models import F, Q, QuerySet

from core.expressions import Negated
from fraud.rules import Rule, Traffic
from tracking.models import ClickEvent

# Clicks that count in metrics (fraud.rules.Traffic.HUMAN): duplicates, bots and prefetches are listed, not counted.
COUNTED_CLICKS = Q(traffic=Traffic.HUMAN)
# The condition of the partial index click_program_flagged: a page of a program's marked clicks scans it only.
MARKED_CLICKS = ~Q(traffic="") | ~Q(flags=[])
# Newest first, in the index's own order (program, (-id)). Ordered by -id instead, the planner may walk the
# primary key backwards over every click of the table when it guesses a program has many marked clicks and it
# has few (measured: 140 ms over 350,000 clicks for a program with none, 0.04 ms this way).
NEWEST_FIRST = Negated(F("id"))


# What a marked click is listed as: how it counted (not counted at all) or a flag it carries (counted), with labels.
MARKED_KINDS = {
    **{value: label for value, label in Traffic.choices if value},
    Rule.PAID_ADS.value: Rule.PAID_ADS.label,
}
# A visitor is shown by the start of its hash only: enough to see one visitor come back on a page.
VISITOR_SHOWN = 8


def marked_as(kind: str) -> Q:
    """The marked clicks of one MARKED_KINDS kind."""
    return flagged_by(kind) if kind == Rule.PAID_ADS else Q(traffic=kind)


def marked_clicks(*, program_id: int) -> QuerySet[ClickEvent]:
    """The program's clicks the rules did not count (duplicate, bot, prefetch) or flagged (paid_ads), newest first
    (NEWEST_FIRST)."""
    return ClickEvent.objects.filter(MARKED_CLICKS, program_id=program_id).order_by(NEWEST_FIRST)


def marked_clicks_before(clicks: QuerySet[ClickEvent], click_id: int) -> QuerySet[ClickEvent]:
    """The clicks older (by id) than `click_id`, as a range of the index rather than a filter on it."""
    return clicks.alias(newest_first=NEWEST_FIRST).filter(newest_first__gt=-click_id)


# Flagged clicks: the click_program_flagged index's own condition, so the planner can use it.
def flagged_clicks_list(
    *,
    program_id: int,
    kind: str | None = None,
    partner_id: int | None = None,
    link_code: str | None = None,
) -> QuerySet[ClickEvent]:
    """The program's clicks that a rule marked (not counted, or flagged), newest first, with partner and link.
    `kind`: one of MARKED_KINDS."""
    rows = marked_clicks(program_id=program_id)
    if kind is not None:
        rows = rows.filter(marked_as(kind))
    if partner_id is not None:
        rows = rows.filter(partner_id=partner_id)
    if link_code is not None:
        rows = rows.filter(link__short_link=link_code)
    return rows.select_related("partner", "link")


def flagged_by(rule: str) -> Q:
    """Rows whose `flags` list holds the rule (clicks and commissions). PostgreSQL: JSON containment, which the
    planner estimates well enough to walk a (program, -id) index in order for a page (a text match is guessed at
    one row, and then it sorts every flagged row of the program first). Elsewhere: the JSON text holds each rule
    quoted, and no rule's name is inside another's."""
    if connection.vendor == "postgresql":
        return Q(flags__contains=[rule])
    return Q(flags__icontains=f'"{rule}"')
