"""The portal's Performance page (/portal/performance): a partner's clicks, leads, sales, revenue and commission
per UTC day and per link over a range, counted as the owner's performance report counts them
(tracking.selectors.performance.partner_performance_get, read from the daily rollups). Only the signed-in account's
partners, in the programs they are enrolled in, and live events only."""

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from core.api.query import ID_MAX, present
from core.money import money
from programs.models import PartnerAccount
from tracking.api.queries import RANGE_DAYS_MAX, DayRangeQuerySerializer
from tracking.selectors.performance import partner_performance_get

from . import selectors
from .session import portal_page

TEMPLATE = "portal/performance.html"
NOT_FOUND = "No such program or link among yours."
NO_LINK = "(no link)"
_DIGITS = re.compile(r"^[0-9]{1,19}$")
# The owner's report's parameters are dateFrom/dateTo; this page's are from/to: its messages say so.
_PARAMETER_NAMES = (("dateFrom", "from"), ("dateTo", "to"))


class Refused(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message, self.status = message, status


@dataclass(frozen=True)
class Query:
    date_from: date
    date_to: date
    program_id: int | None
    link_id: int | None


def _day_range(request: HttpRequest) -> tuple[date, date]:
    """The range as the owner's report reads it (tracking.api.queries.DayRangeQuerySerializer: its default, its
    limits and its checks), under this page's parameter names."""
    given = present(request.GET)
    data = {api: given[page] for api, page in _PARAMETER_NAMES if page in given}
    query = DayRangeQuerySerializer(data=data, context={"today": timezone.now().date()})
    if not query.is_valid():
        messages = [str(message) for errors in query.errors.values() for message in errors]
        text = "; ".join(messages)
        for api, page in _PARAMETER_NAMES:
            text = text.replace(api, page)
        raise Refused(text, 400)
    return query.validated_data["date_from"], query.validated_data["date_to"]


def _id(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "")
    if raw == "":
        return None
    if not _DIGITS.match(raw):
        raise Refused(f"{name} must be a number.", 400)
    value = int(raw)
    if value > ID_MAX:
        raise Refused(NOT_FOUND, 404)  # as an unknown id: no such row can exist
    return value


def _shown(value: str) -> str:
    """A parameter as the form shows it again: short, printable only."""
    return "".join(char for char in value[:40] if char.isprintable())


def _amounts(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "revenue": money(row["revenue_cents"]), "commission": money(row["commission_cents"])}


@require_safe
@portal_page
def performance(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    enrolments = list(selectors.account_enrolments(account))
    context: dict[str, Any] = {
        "account": account,
        "programs": sorted({e.program_id: e.program for e in enrolments}.values(), key=lambda p: (p.name, p.pk)),
        "given": {name: _shown(request.GET.get(name, "")) for name in ("from", "to", "program", "link")},
        "range_days_max": RANGE_DAYS_MAX,
    }
    try:
        date_from, date_to = _day_range(request)
        query = Query(date_from, date_to, _id(request, "program"), _id(request, "link"))
        pairs = [(e.program_id, e.partner_id) for e in enrolments]
        if query.program_id is not None:
            pairs = [pair for pair in pairs if pair[0] == query.program_id]
            if not pairs:
                raise Refused(NOT_FOUND, 404)
        link = None
        if query.link_id is not None:
            link = selectors.account_links_by_id(account, [query.link_id]).get(query.link_id)
            if link is None or link.program_id is None or link.partner_id is None:
                raise Refused(NOT_FOUND, 404)
            if (link.program_id, link.partner_id) not in pairs:
                raise Refused(NOT_FOUND, 404)
            pairs = [(link.program_id, link.partner_id)]
    except Refused as refused:
        return render(request, TEMPLATE, {**context, "error": refused.message}, status=refused.status)

    report = partner_performance_get(enrolments=pairs, date_from=date_from, date_to=date_to, link_id=query.link_id)
    names = selectors.account_links_by_id(account, [row["link_id"] for row in report["by_link"] if row["link_id"]])
    by_link, unnamed = [], 0
    for row in report["by_link"]:
        found = names.get(row["link_id"])
        if found is None:  # clicks naming no link, or a link deleted since: one row, last
            unnamed += row["clicks"]
            continue
        program_name = found.program.name if found.program else ""
        by_link.append(
            {"link_id": found.pk, "name": found.short_link, "program": program_name, "clicks": row["clicks"]}
        )
    if unnamed:
        by_link.append({"link_id": None, "name": NO_LINK, "program": "", "clicks": unnamed})
    program_names = {p.pk: p.name for p in context["programs"]}
    context.update(
        date_from=date_from,
        date_to=date_to,
        program_id=query.program_id,
        link=link,
        totals=_amounts(report["totals"]),
        by_day=[_amounts(row) for row in report["by_day"]],
        by_program=[_amounts({**row, "name": program_names[row["program_id"]]}) for row in report["by_program"]]
        if len(report["by_program"]) > 1
        else [],
        by_link=by_link,
    )
    return render(request, TEMPLATE, context)
