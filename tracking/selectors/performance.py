"""The performance report: live clicks, settled leads, attributed sales, revenue and commission per UTC day and
per partner, read from the daily rollups plus the live delta (tracking.rollups)."""

from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from programs.models import Partner, Program
from tracking.models import DailyRollup
from tracking.rollups import CLICK, KINDS, Watermarks, rollup_read, rollup_sums, rows_with_delta

NO_PARTNER_NAME = "(no partner)"


def _empty_row() -> dict[str, int]:
    return {"clicks": 0, "leads": 0, "sales": 0, "revenue_cents": 0, "commission_cents": 0}


# The report's numbers and the rollup columns they come from: settled leads, attributed sales.
_PERFORMANCE_COLUMNS = {
    "clicks": "clicks",
    "leads": "leads",
    "sales": "attributed_sales",
    "revenue_cents": "revenue_cents",
    "commission_cents": "commission_cents",
}


def tracking_performance_get(*, program: Program, date_from: date, date_to: date) -> dict[str, Any]:
    """Live clicks, settled live leads and attributed live sales per UTC day and per partner, over the
    inclusive range. Revenue is the sales' amount_cents; commission is what their commissions still pay
    (commissions.selectors.payable_cents, the definition every page uses).
    Amounts are summed as stored, whatever their currency.
    Read from the daily rollups plus the live delta of the events not folded in yet (tracking.rollups): the
    cost follows the days and partners in range, not the number of events."""

    def read(marks: Watermarks) -> list[dict[str, Any]]:
        rollups = DailyRollup.objects.filter(program=program, is_test=False, day__gte=date_from, day__lte=date_to)
        by_day_and_partner = rollup_sums(rollups, "day", "partner_id")
        in_range = lambda row: date_from <= row["day"] <= date_to  # noqa: E731
        return list(rows_with_delta(marks, by_day_and_partner, program_id=program.pk, keep=in_range))

    rows = rollup_read(read)
    names = dict(
        Partner.objects.filter(pk__in={row["partner_id"] for row in rows if row["partner_id"]}).values_list(
            "pk", "name"
        )
    )
    # Counted, not stepped past date_to: the calendar's last day has no next one.
    days = {date_from + timedelta(days=n): _empty_row() for n in range((date_to - date_from).days + 1)}
    partners: dict[int | None, dict[str, Any]] = {}
    for row in rows:
        # A partner deleted since its events counts under "(no partner)", as its raw events name none.
        partner_id = row["partner_id"] if row["partner_id"] in names else None
        found = partners.get(partner_id)
        if found is None:
            found = partners[partner_id] = {
                "partner_id": partner_id,
                "partner_name": NO_PARTNER_NAME if partner_id is None else names[partner_id],
                **_empty_row(),
            }
        for target in (days[row["day"]], found):
            for name, column in _PERFORMANCE_COLUMNS.items():
                target[name] += row[column] or 0

    totals = _empty_row()
    for day_row in days.values():
        for name in totals:
            totals[name] += day_row[name]
    by_partner = sorted(
        (row for row in partners.values() if any(row[name] for name in _PERFORMANCE_COLUMNS)),
        # Ties: more sales, more clicks, then by id, the deleted partners' row last.
        key=lambda row: (
            -row["revenue_cents"],
            -row["sales"],
            -row["clicks"],
            row["partner_id"] is None,
            row["partner_id"] or 0,
        ),
    )
    return {
        "range": {"from": date_from.isoformat(), "to": date_to.isoformat()},
        "totals": totals,
        "by_day": [{"date": day.isoformat(), **row} for day, row in days.items()],
        "by_partner": by_partner,
    }


def partner_performance_get(
    *, enrolments: Iterable[tuple[int, int]], date_from: date, date_to: date, link_id: int | None = None
) -> dict[str, Any]:
    """tracking_performance_get's numbers for one partner account: only the (program id, partner id) pairs given
    (its enrolments), live events only, per UTC day, per program and per link, over the inclusive range. Counted
    as the owner's report counts (the same rollup columns, commission what still pays after refunds, amounts summed
    as stored whatever their currency). The rollups carry a link for clicks only (leads and sales have none), so
    `by_link` holds clicks, and with `link_id` every number but clicks is 0.
    Queries: the watermarks twice, one rollup read, and the live delta per program (one per kind): flat in days,
    links and events."""
    pairs = set(enrolments)
    program_ids = sorted({program_id for program_id, _ in pairs})
    partner_ids = {partner_id for _, partner_id in pairs}
    kinds = (CLICK,) if link_id is not None else KINDS

    def wanted(row: dict[str, Any]) -> bool:
        return (
            (row["program_id"], row["partner_id"]) in pairs
            and date_from <= row["day"] <= date_to
            and (link_id is None or row["link_id"] == link_id)
        )

    def read(marks: Watermarks) -> list[dict[str, Any]]:
        rollups = DailyRollup.objects.filter(
            program_id__in=program_ids, partner_id__in=partner_ids, is_test=False, day__gte=date_from, day__lte=date_to
        )
        if link_id is not None:
            rollups = rollups.filter(link_id=link_id)
        rows = [row for row in rollup_sums(rollups, "day", "program_id", "partner_id", "link_id") if wanted(row)]
        for program_id in program_ids:
            rows.extend(rows_with_delta(marks, (), program_id=program_id, kinds=kinds, keep=wanted))
        return rows

    rows = rollup_read(read) if pairs else []
    # Counted over a number of days, not by stepping a date: the last day may be date.max.
    days = {date_from + timedelta(days=n): _empty_row() for n in range((date_to - date_from).days + 1)}
    programs: dict[int, dict[str, int]] = {program_id: _empty_row() for program_id in program_ids}
    links: dict[int, int] = {}
    for row in rows:
        for target in (days[row["day"]], programs[row["program_id"]]):
            for name, column in _PERFORMANCE_COLUMNS.items():
                target[name] += row[column] or 0
        if row["clicks"]:
            links[row["link_id"]] = links.get(row["link_id"], 0) + row["clicks"]
    totals = _empty_row()
    for day_row in days.values():
        for name in totals:
            totals[name] += day_row[name]
    return {
        "range": {"from": date_from.isoformat(), "to": date_to.isoformat()},
        "totals": totals,
        "by_day": [{"date": day.isoformat(), **row} for day, row in days.items()],
        "by_program": [{"program_id": program_id, **row} for program_id, row in programs.items()],
        # Most clicks first; 0 is clicks that named no link.
        "by_link": [
            {"link_id": pk, "clicks": clicks}
            for pk, clicks in sorted(links.items(), key=lambda item: (-item[1], item[0]))
        ],
    }
