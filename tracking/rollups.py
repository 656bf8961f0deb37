"""Daily rollups: what the dashboard's reports count, kept up to date incrementally so that their reads stay flat
as the event tables grow.

A run (`rollups_update`, the beat task `tracking.update_rollups` every ROLLUP_INTERVAL_SECONDS, or
`manage.py rollup update`) does three things under one lock, in one transaction:

1. Folds in the events recorded since the last run: for each kind (clicks, leads, sales) the rows with an id
   above the kind's watermark and at least ROLLUP_SETTLE_SECONDS old, grouped per program, UTC day, test flag,
   partner and link, are added to DailyRollup, and the watermark moves to the highest id folded in. The settle
   time lets a transaction that took an id commit before the watermark passes it.
2. Recounts the days whose already folded-in events changed since the last run: a provisional lead that settled
   (LeadEvent.settled_at), a sale whose commission was created late, refunded or voided (Commission.updated_at).
   The lead and sale columns of those days are replaced by a recount of their events up to the watermark.
3. Adds the folded-in live clicks to the link counters (ReferralLink.clicks, last_clicked) and the
   partner-program click counters, and the folded-in live sales with a partner to the partner-program sales and
   revenue counters, so a click or a sale itself updates no counter row: a popular link's clicks and a partner's
   sales never wait on one row lock. Only new events are added (never a recount's): the counters are gross.

A read sums the rollup rows and counts live the events above the watermarks (`rollup_read`), so it is exact at
any moment for new events, and its cost depends on the days and links in range, not on the number of events.
Changes to events already folded in (a settlement, a refund, a void) show in the reports after the next run:
the freshness of those is one run (a minute by default). Counting is defined once, in `_AGGREGATES`: the runs,
the recounts and the live delta all use it, and `rollups_verify` checks that the rollups equal a recount."""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from commissions.models import Commission
from commissions.selectors import payable_cents
from programs.models import Partner, ReferralLink
from tracking.models import ClickEvent, DailyRollup, LeadEvent, RollupState, SaleEvent
from tracking.quality import racing_duplicates_mark
from tracking.sql import link_clicks_add_sql, partner_program_add_sql, rollup_add_sql

CLICK, LEAD, SALE = "click", "lead", "sale"
KINDS = (CLICK, LEAD, SALE)
# How far back a run looks again for changes, beyond the previous run: a change saved before that run but
# committed after it is still found.
CHANGE_MARGIN = timedelta(minutes=5)
# Events folded in per kind and run: a backlog (a fresh install over old data) is caught up over several runs.
BATCH_IDS = 1_000_000
READ_ATTEMPTS = 3

KIND_MODELS: dict[str, type[ClickEvent | LeadEvent | SaleEvent]] = {CLICK: ClickEvent, LEAD: LeadEvent, SALE: SaleEvent}
TIME_FIELDS = {CLICK: "click_timestamp", LEAD: "lead_timestamp", SALE: "sale_date"}
COLUMNS = {
    CLICK: ("clicks",),
    LEAD: ("leads", "provisional_leads", "leads_with_key"),
    SALE: ("sales", "attributed_sales", "revenue_cents", "commission_cents"),
}
ALL_COLUMNS = tuple(column for kind in KINDS for column in COLUMNS[kind])
GROUP = ("program_id", "day", "is_test", "partner_id", "link_id")

_settled = Q(provisional=False)


# Only counted clicks (fraud.rules.Traffic.HUMAN): duplicates, bots and prefetches are recorded, never counted.
_counted = Q(traffic="")


def _click_sums() -> dict[str, Any]:
    return {"clicks": Count("id", filter=_counted), "last_at": Max("click_timestamp", filter=_counted)}


def _lead_sums() -> dict[str, Any]:
    return {
        "leads": Count("id", filter=_settled),
        "provisional_leads": Count("id", filter=Q(provisional=True)),
        "leads_with_key": Count("id", filter=_settled & ~Q(customer_key="")),
    }


def _sale_sums() -> dict[str, Any]:
    attributed = Q(attributed=True)
    return {
        "sales": Count("id"),
        "attributed_sales": Count("id", filter=attributed),
        "revenue_cents": Sum("amount_cents", filter=attributed),
        "commission_cents": Sum(payable_cents("commission__"), filter=attributed),
    }


# What each kind adds to a rollup row: the one definition of counting.
_AGGREGATES: dict[str, Callable[[], dict[str, Any]]] = {CLICK: _click_sums, LEAD: _lead_sums, SALE: _sale_sums}


def kind_grouped(kind: str, events: QuerySet[Any]) -> list[dict[str, Any]]:
    """The events counted per program, UTC day, test flag, partner and link (0 for none; leads and sales have no
    link), as rows of GROUP plus the kind's COLUMNS (and `last_at` for clicks)."""
    link = "link_id" if kind == CLICK else None
    keys = ["program_id", "is_test", "partner_id", *([link] if link else [])]
    rows = (
        events.annotate(day=TruncDate(TIME_FIELDS[kind], tzinfo=UTC))
        .order_by()
        .values("day", *keys)
        .annotate(**_AGGREGATES[kind]())
    )
    grouped = []
    for row in rows:
        row["partner_id"] = row["partner_id"] or 0
        row["link_id"] = row.get("link_id") or 0
        for column in COLUMNS[kind]:
            row[column] = row[column] or 0
        grouped.append(row)
    return grouped


# --- Writing --------------------------------------------------------------------------------------------------


def _rollup_add(kind: str, rows: Iterable[dict[str, Any]]) -> None:
    columns = COLUMNS[kind]
    values = [[row[name] for name in (*GROUP, *columns)] for row in rows]
    if values:
        with connection.cursor() as cursor:
            cursor.executemany(rollup_add_sql(GROUP, columns), values)


def _counters_add(rows: Iterable[dict[str, Any]]) -> None:
    """Adds live clicks to their link's counters (clicks, last_clicked) and their partner's in the program."""
    links: dict[int, tuple[int, datetime]] = {}
    partners: dict[tuple[int, int], int] = {}
    for row in rows:
        if row["is_test"] or not row["clicks"]:
            continue  # a group of uncounted clicks only (duplicates, bots) has nothing to add
        if row["link_id"]:
            clicks, last_at = links.get(row["link_id"], (0, row["last_at"]))
            links[row["link_id"]] = (clicks + row["clicks"], max(last_at, row["last_at"]))
        if row["partner_id"]:
            key = (row["partner_id"], row["program_id"])
            partners[key] = partners.get(key, 0) + row["clicks"]
    with connection.cursor() as cursor:
        if links:
            cursor.executemany(
                link_clicks_add_sql(),
                [[clicks, last_at, last_at, link_id] for link_id, (clicks, last_at) in sorted(links.items())],
            )
        if partners:
            cursor.executemany(
                partner_program_add_sql(("clicks",)),
                [[clicks, partner_id, program_id] for (partner_id, program_id), clicks in sorted(partners.items())],
            )


def _sale_counters_add(*, after_id: int, up_to_id: int) -> None:
    """Adds the live sales with a partner in this id range to their partner's sales and revenue counters in the
    program (gross: a refund changes neither)."""
    rows = (
        SaleEvent.objects.filter(id__gt=after_id, id__lte=up_to_id, is_test=False, partner_id__isnull=False)
        .values_list("partner_id", "program_id")
        .annotate(sales=Count("id"), revenue=Sum("amount_cents"))
        .order_by("partner_id", "program_id")
    )
    values = [[count, revenue or 0, partner_id, program_id] for partner_id, program_id, count, revenue in rows]
    if values:
        with connection.cursor() as cursor:
            cursor.executemany(partner_program_add_sql(("sales", "revenue_cents")), values)


def _state_locked() -> RollupState:
    # The state row is the runs' lock: a second run waits here and then sees the first one's watermarks.
    state = RollupState.objects.select_for_update().filter(pk=1).first()
    if state is None:
        RollupState.objects.get_or_create(pk=1)
        state = RollupState.objects.select_for_update().get(pk=1)
    return state


@dataclass
class RunResult:
    folded: dict[str, int] = field(default_factory=dict)
    recounted_days: int = 0
    caught_up: bool = True


def _events_in(kind: str, row: dict[str, Any]) -> int:
    events: int = row["leads"] + row["provisional_leads"] if kind == LEAD else row[COLUMNS[kind][0]]
    return events


def _fold_new(kind: str, state: RollupState, *, settled_before: datetime) -> tuple[int, bool]:
    """Folds in the kind's settled events above its watermark (at most BATCH_IDS ids) and moves the watermark.
    Returns how many events were folded in and whether the kind is caught up."""
    model = KIND_MODELS[kind]
    start = getattr(state, f"{kind}_id")
    settled = model.objects.filter(created_at__lte=settled_before)
    end = settled.filter(id__gt=start, id__lte=start + BATCH_IDS).aggregate(last=Max("id"))["last"]
    if end is None:
        return 0, not settled.filter(id__gt=start).exists()
    # An id below `end` whose event is not settled yet is folded in now all the same: its transaction began
    # before a settled one's id was taken, and the settle time covers how long such a transaction may run.
    events = model.objects.filter(id__gt=start, id__lte=end)
    if kind == CLICK:
        racing_duplicates_mark(after_id=start, up_to_id=end)
    rows = kind_grouped(kind, events)
    _rollup_add(kind, rows)
    if kind == CLICK:
        if state.counters_from_click_id > start:
            rows_for_counters = kind_grouped(CLICK, events.filter(id__gt=state.counters_from_click_id))
        else:
            rows_for_counters = rows
        _counters_add(rows_for_counters)
    if kind == SALE:
        _sale_counters_add(after_id=max(start, state.counters_from_sale_id), up_to_id=end)
    setattr(state, f"{kind}_id", end)
    return sum(_events_in(kind, row) for row in rows), not settled.filter(id__gt=end).exists()


def _changed_days(since: datetime, state: RollupState) -> dict[str, set[tuple[int, date]]]:
    """(program, day) pairs whose folded-in leads settled, or whose folded-in sales' commission changed, since."""
    settled = (
        LeadEvent.objects.filter(settled_at__gte=since, provisional=False, id__lte=state.lead_id)
        .annotate(day=TruncDate("lead_timestamp", tzinfo=UTC))
        .order_by()
        .values_list("program_id", "day")
        .distinct()
    )
    commissioned = (
        Commission.objects.filter(updated_at__gte=since, sale_id__lte=state.sale_id)
        .annotate(day=TruncDate("sale__sale_date", tzinfo=UTC))
        .order_by()
        .values_list("program_id", "day")
        .distinct()
    )
    return {LEAD: set(settled), SALE: set(commissioned)}


def _recount_days(kind: str, days: set[tuple[int, date]], state: RollupState) -> None:
    """Replaces the kind's columns of these (program, day) pairs by a recount of their events up to the
    watermark."""
    model, time_field = KIND_MODELS[kind], TIME_FIELDS[kind]
    watermark = getattr(state, f"{kind}_id")
    zero = dict.fromkeys(COLUMNS[kind], 0)
    for program_id, day in sorted(days):
        DailyRollup.objects.filter(program_id=program_id, day=day).update(**zero)
        start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
        events = model.objects.filter(
            program_id=program_id,
            id__lte=watermark,
            **{f"{time_field}__gte": start, f"{time_field}__lt": start + timedelta(days=1)},
        )
        _rollup_add(kind, kind_grouped(kind, events))


def rollups_update(*, now: datetime | None = None, settle: timedelta | None = None) -> RunResult:
    """One run: folds in new events, recounts changed days, moves the counters. See the module's docstring.
    `settle` (default ROLLUP_SETTLE_SECONDS) is how old an event must be to be folded in."""
    now = now or timezone.now()
    settled_before = now - (settle if settle is not None else timedelta(seconds=settings.ROLLUP_SETTLE_SECONDS))
    result = RunResult()
    with transaction.atomic():
        state = _state_locked()
        since = (state.changes_seen_at or now) - CHANGE_MARGIN
        # Changes among the events folded in by earlier runs; what this run folds in is read as it is now.
        changed = _changed_days(since, state)
        for kind in KINDS:
            result.folded[kind], caught_up = _fold_new(kind, state, settled_before=settled_before)
            result.caught_up &= caught_up
        for kind, days in changed.items():
            _recount_days(kind, days, state)
            result.recounted_days += len(days)
        state.changes_seen_at = now
        state.generation += 1
        state.updated_at = now
        state.save()
    return result


def rollups_catch_up(*, now: datetime | None = None, settle: timedelta | None = None) -> list[RunResult]:
    """Runs until every kind is caught up (a fresh install over existing events, or `manage.py rollup update`)."""
    results = [rollups_update(now=now, settle=settle)]
    while not results[-1].caught_up:
        results.append(rollups_update(now=now, settle=settle))
    return results


# --- Reading --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Watermarks:
    click_id: int = 0
    lead_id: int = 0
    sale_id: int = 0
    generation: int = 0
    counters_from_click_id: int = 0
    counters_from_sale_id: int = 0

    def of(self, kind: str) -> int:
        watermark: int = getattr(self, f"{kind}_id")
        return watermark

    @property
    def counted_click_id(self) -> int:
        """The clicks at or below this id are on the link and partner counters."""
        return max(self.click_id, self.counters_from_click_id)

    @property
    def counted_sale_id(self) -> int:
        """The live sales at or below this id are on the partner-program sales and revenue counters."""
        return max(self.sale_id, self.counters_from_sale_id)


def watermarks_get() -> Watermarks:
    row = (
        RollupState.objects.filter(pk=1)
        .values("click_id", "lead_id", "sale_id", "generation", "counters_from_click_id", "counters_from_sale_id")
        .first()
    )
    return Watermarks(**row) if row else Watermarks()


T = TypeVar("T")


def rollup_read(read: Callable[[Watermarks], T]) -> T:
    """Calls read(watermarks) and returns its answer, read again when a run committed in between (the rollup rows
    it read may then already hold events it also counted live above the old watermark)."""
    for _ in range(READ_ATTEMPTS - 1):
        marks = watermarks_get()
        answer = read(marks)
        if watermarks_get().generation == marks.generation:
            return answer
    # Runs commit about once a minute: three in a row mean the reads are slower than that; take the last one.
    return read(watermarks_get())


def rollup_sums(rollups: QuerySet[DailyRollup], *keys: str) -> QuerySet[DailyRollup, dict[str, Any]]:
    """The rollup rows summed per `keys` (every column)."""
    sums: QuerySet[DailyRollup, dict[str, Any]] = (
        rollups.order_by().values(*keys).annotate(**{column: Sum(column) for column in ALL_COLUMNS})
    )
    return sums


def rows_with_delta(
    marks: Watermarks,
    rollup_rows: Iterable[dict[str, Any]],
    *,
    program_id: int,
    kinds: Iterable[str] = KINDS,
    live_only: bool = True,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """The rollup rows, then the program's events above the watermarks, grouped as rollup rows (the other kinds'
    columns 0), that `keep` accepts: rows to sum. The events are selected by program, test flag and id alone, so
    the (program, is_test, -id) index drives the query (a few rows above the watermark) whatever the read narrows
    to: its day range, partners or links are picked from the grouped rows by `keep`."""
    yield from rollup_rows
    for kind in kinds:
        events = KIND_MODELS[kind].objects.filter(program_id=program_id, id__gt=marks.of(kind))
        if live_only:
            events = events.filter(is_test=False)
        for row in kind_grouped(kind, events):
            if keep is None or keep(row):
                yield {**dict.fromkeys(ALL_COLUMNS, 0), **{k: row[k] for k in (*GROUP, *COLUMNS[kind])}}


@dataclass(frozen=True)
class ClickCount:
    clicks: int
    last_clicked: datetime | None


def clicks_not_on_counters(marks: Watermarks, program_id: int | None = None) -> list[dict[str, Any]]:
    """The live clicks the rollup task has not added to the link and partner counters yet, per partner and link
    (`clicks`, latest `last_at`), of one program or all: what a read adds to the counters. Read by id above the
    watermark only (the primary key or the (program, is_test, -id) index); callers pick their links from the
    grouped rows."""
    programs = {} if program_id is None else {"program_id": program_id}
    rows: Any = (
        ClickEvent.objects.filter(is_test=False, id__gt=marks.counted_click_id, **programs)
        .filter(_counted)
        .order_by()
        .values("partner_id", "link_id")
        .annotate(clicks=Count("id"), last_at=Max("click_timestamp"))
    )
    return list(rows)


def with_clicks_not_counted(clicks: int, last: datetime | None, more: Iterable[dict[str, Any]]) -> ClickCount:
    """A counter (and its latest click) plus rows of clicks_not_on_counters."""
    for row in more:
        clicks += row["clicks"]
        last = row["last_at"] if last is None else max(last, row["last_at"])
    return ClickCount(clicks=clicks, last_clicked=last)


@dataclass(frozen=True)
class SaleCount:
    sales: int
    revenue_cents: int


def sales_not_on_counters(marks: Watermarks, program_id: int | None = None) -> dict[int, SaleCount]:
    """The live sales with a partner the rollup task has not added to the partner-program counters yet, per
    partner (their number and gross revenue), of one program or of all (then a partner's summed over its
    programs): what a read adds to the counters. Read by id above the watermark only (the primary key or the
    (program, is_test, -id) index)."""
    programs = {} if program_id is None else {"program_id": program_id}
    rows = (
        SaleEvent.objects.filter(is_test=False, partner_id__isnull=False, id__gt=marks.counted_sale_id, **programs)
        .order_by()
        .values_list("partner_id")
        .annotate(sales=Count("id"), revenue=Sum("amount_cents"))
    )
    return {partner_id: SaleCount(sales=sales, revenue_cents=revenue or 0) for partner_id, sales, revenue in rows}


def with_sales_not_counted(sales: int, revenue_cents: int, more: SaleCount | None) -> SaleCount:
    """A partner's sales and revenue counters plus its row of sales_not_on_counters, if any."""
    if more is None:
        return SaleCount(sales=sales, revenue_cents=revenue_cents)
    return SaleCount(sales=sales + more.sales, revenue_cents=revenue_cents + more.revenue_cents)


def link_click_counts(link_ids: Iterable[int]) -> dict[int, ClickCount]:
    """Each link's live clicks and latest click: its counters plus its clicks not on them yet. Two queries
    (and the watermarks twice), whatever the number of clicks."""
    ids = list(link_ids)

    def read(marks: Watermarks) -> dict[int, ClickCount]:
        more: dict[int, list[dict[str, Any]]] = {}
        for row in clicks_not_on_counters(marks):
            more.setdefault(row["link_id"], []).append(row)
        return {
            pk: with_clicks_not_counted(clicks, last_clicked, more.get(pk, []))
            for pk, clicks, last_clicked in ReferralLink.objects.filter(pk__in=ids).values_list(
                "pk", "clicks", "last_clicked"
            )
        }

    return rollup_read(read) if ids else {}


def partner_commission_cents(marks: Watermarks, *, program_id: int, partner_ids: Iterable[int]) -> dict[int, int]:
    """What the program's commissions still pay each of these partners (commissions.selectors.payable_cents),
    from the rollups plus the sales not folded in yet; as of the last run for refunds and voids. Two queries."""
    ids = set(partner_ids)
    rollups = DailyRollup.objects.filter(program_id=program_id, is_test=False, partner_id__in=ids)
    totals: dict[int, int] = {}
    for row in rows_with_delta(
        marks,
        rollup_sums(rollups, "partner_id"),
        program_id=program_id,
        kinds=(SALE,),
        keep=lambda row: row["partner_id"] in ids,
    ):
        totals[row["partner_id"]] = totals.get(row["partner_id"], 0) + (row["commission_cents"] or 0)
    return totals


# --- Checking -------------------------------------------------------------------------------------------------


def _sums_by_key(
    rows: Iterable[dict[str, Any]], columns: tuple[str, ...], *, partners: set[int], links: set[int]
) -> dict[tuple[Any, ...], dict[str, int]]:
    """Sums per GROUP key; a partner or link deleted since (the events then name none) counts as none."""
    sums: dict[tuple[Any, ...], dict[str, int]] = {}
    for row in rows:
        row = {**row, "partner_id": row["partner_id"] if row["partner_id"] in partners else 0}
        row["link_id"] = row["link_id"] if row["link_id"] in links else 0
        key = tuple(row[name] for name in GROUP)
        target = sums.setdefault(key, dict.fromkeys(columns, 0))
        for column in columns:
            target[column] += row[column] or 0
    return {key: values for key, values in sums.items() if any(values.values())}


def rollups_verify() -> list[str]:
    """Compares the rollups with a recount of every event up to the watermarks (clicks only from the day raw
    clicks were pruned to). Returns the differences found, one line each; none when they agree. Reads the whole
    event tables: an operator's check (`manage.py rollup verify`), not a request path."""
    with transaction.atomic():
        state = _state_locked()
        problems = []
        known = {
            "partners": set(Partner.objects.values_list("id", flat=True)),
            "links": set(ReferralLink.objects.values_list("id", flat=True)),
        }
        for kind in KINDS:
            columns = COLUMNS[kind]
            events = KIND_MODELS[kind].objects.filter(id__lte=getattr(state, f"{kind}_id"))
            rollups = DailyRollup.objects.all()
            if kind == CLICK and state.clicks_pruned_before:
                start = datetime.combine(state.clicks_pruned_before, datetime.min.time(), tzinfo=UTC)
                events = events.filter(**{f"{TIME_FIELDS[CLICK]}__gte": start})
                rollups = rollups.filter(day__gte=state.clicks_pruned_before)
            counted = _sums_by_key(kind_grouped(kind, events), columns, **known)
            stored = _sums_by_key(rollups.values(*GROUP, *columns), columns, **known)
            for key in sorted(set(counted) | set(stored), key=str):
                if counted.get(key) != stored.get(key):
                    where = dict(zip(GROUP, key, strict=True))
                    problems.append(f"{kind} {where}: rollup {stored.get(key)}, recount {counted.get(key)}")
        return problems
