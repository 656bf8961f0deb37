"""A partner's figure in a program over a period, as tiers and bonuses judge it: attributed live sales (a count) or
their revenue (the smallest currency unit, summed as stored whatever the currency, as the reports sum), net of
refunds.

Read as the reports read: the daily rollups of the period plus the sales not folded in yet (tracking.rollups'
rows_with_delta under rollup_read), so the cost follows the days in the period, not the number of sales. Refunds
are then taken off from the commissions, which record them (Commission.sale_refunded_cents; the rollups' sales
and revenue are gross): a sale refunded whole no longer counts as a sale, and what was refunded of a sale is
taken off its revenue. That part is read live, so a refund lowers the figure at once (the clawback of a bonus
relies on it). A sale that earned no commission has nowhere a refund is recorded: it stays counted, as the
reports count it. An owner's void is no refund: the sale still counts (void the bonus too if it should not pay).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Q, Sum
from django.db.models.functions import Least

from commissions.models import Commission, CommissionKind, CommissionStatus
from groups.models import Metric
from groups.periods import PeriodBounds, period_bounds
from tracking.models import DailyRollup
from tracking.rollups import SALE, Watermarks, rollup_read, rollup_sums, rows_with_delta


@dataclass(frozen=True)
class Figures:
    """A partner's sales (a count) and revenue in a period, net of refunds."""

    sales: int = 0
    revenue_cents: int = 0

    def of(self, metric: str) -> int:
        if metric == Metric.SALES:
            return self.sales
        if metric == Metric.REVENUE:
            return self.revenue_cents
        raise ValueError(f"Unknown metric: {metric!r}")


def _in_period(bounds: PeriodBounds, day: Any) -> bool:
    start, end = bounds.start_day, bounds.end_day
    return (start is None or day >= start) and (end is None or day < end)


def _gross(bounds: PeriodBounds, *, program_id: int, partner_ids: set[int] | None) -> dict[int, list[int]]:
    """Attributed live sales and revenue per partner in the period: rollups plus the live delta."""

    def read(marks: Watermarks) -> list[dict[str, Any]]:
        rollups = DailyRollup.objects.filter(program_id=program_id, is_test=False).exclude(partner_id=0)
        if bounds.start_day is not None:
            rollups = rollups.filter(day__gte=bounds.start_day, day__lt=bounds.end_day)
        if partner_ids is not None:
            rollups = rollups.filter(partner_id__in=partner_ids)
        return list(
            rows_with_delta(
                marks,
                rollup_sums(rollups, "partner_id"),
                program_id=program_id,
                kinds=(SALE,),
                keep=lambda row: (
                    bool(row["partner_id"])
                    and (partner_ids is None or row["partner_id"] in partner_ids)
                    and _in_period(bounds, row["day"])
                ),
            )
        )

    totals: dict[int, list[int]] = {}
    for row in rollup_read(read):
        total = totals.setdefault(row["partner_id"], [0, 0])
        total[0] += row["attributed_sales"] or 0
        total[1] += row["revenue_cents"] or 0
    return totals


def _refunded(bounds: PeriodBounds, *, program_id: int, partner_ids: set[int] | None) -> dict[int, list[int]]:
    """Per partner: their sales of the period refunded whole, and the revenue refunded. Only commissions a refund
    touched are read (refunded or reversed: the program-status index)."""
    commissions = Commission.objects.filter(
        program_id=program_id,
        kind=CommissionKind.SALE,
        status__in=(CommissionStatus.REFUNDED, CommissionStatus.REVERSED),
        refund_count__gt=0,
        sale__is_test=False,
        sale__attributed=True,
        sale__partner_id__isnull=False,
    )
    if bounds.start is not None:
        commissions = commissions.filter(sale__sale_date__gte=bounds.start, sale__sale_date__lt=bounds.end)
    if partner_ids is not None:
        commissions = commissions.filter(sale__partner_id__in=partner_ids)
    rows = (
        commissions.order_by()
        .values_list("sale__partner_id")
        .annotate(
            whole=Count("pk", filter=Q(sale_refunded_cents__gte=F("sale__amount_cents"))),
            revenue=Sum(Least("sale_refunded_cents", "sale__amount_cents")),
        )
    )
    return {partner_id: [whole, revenue or 0] for partner_id, whole, revenue in rows}


def partner_figures(
    *, program_id: int, period_key: str, partner_ids: Iterable[int] | None = None
) -> dict[int, Figures]:
    """Each partner's figures in the program over the period a key names (groups.periods), net of refunds; the
    partners named (all with a sale in the period when None). Three queries, and the watermarks, whatever the
    number of sales; a partner with no sale is absent."""
    bounds = period_bounds(period_key)
    wanted = None if partner_ids is None else set(partner_ids)
    if wanted is not None and not wanted:
        return {}
    gross = _gross(bounds, program_id=program_id, partner_ids=wanted)
    refunded = _refunded(bounds, program_id=program_id, partner_ids=wanted)
    figures = {}
    for partner_id, (sales, revenue) in gross.items():
        whole, revenue_refunded = refunded.get(partner_id, (0, 0))
        figures[partner_id] = Figures(sales=max(0, sales - whole), revenue_cents=max(0, revenue - revenue_refunded))
    return figures


def partner_figure(*, program_id: int, partner_id: int, metric: str, period_key: str) -> int:
    """One partner's figure of `metric` in the program over the period a key names, net of refunds."""
    figures = partner_figures(program_id=program_id, period_key=period_key, partner_ids=[partner_id])
    return figures.get(partner_id, Figures()).of(metric)
