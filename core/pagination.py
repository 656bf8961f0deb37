import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, TypeVar

from django.core.paginator import Paginator
from django.db.models import Model, Q, QuerySet

# Rows a dashboard list counts at most: a count of every row of a program's busiest table would grow with it.
COUNT_CAP = 10_000

RowT = TypeVar("RowT")


class CappedPaginator(Paginator[RowT]):
    """A Paginator that counts at most `cap` rows (SELECT COUNT(*) over a LIMIT), so a page costs the same with a
    thousand rows or ten million; past the cap the list says "10000+" and offers the first cap rows' pages."""

    def __init__(self, object_list: QuerySet[Any, RowT], *args: Any, cap: int = COUNT_CAP, **kwargs: Any) -> None:
        super().__init__(object_list, *args, **kwargs)
        # Paginator types object_list as any sequence; these rows are a QuerySet, which counts in the database.
        self._queryset = object_list
        self.cap = cap

    @cached_property
    def _bounded_count(self) -> int:
        return self._queryset[: self.cap + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self._bounded_count, self.cap)

    @property
    def capped(self) -> bool:
        return self._bounded_count > self.cap


@dataclass(frozen=True)
class KeysetPage:
    """One page of a list read newest first by (created_at, pk), and the cursors to its neighbours. A page costs
    the same on the first page or the thousandth, with a hundred rows or ten million: nothing is counted and no
    row is skipped over (an OFFSET reads every row before the page)."""

    rows: list[Any]
    newer: str  # the cursor to pass as `after` for the page before this one; "" on the newest page
    older: str  # the cursor to pass as `before` for the next page; "" on the oldest page


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A cursor: the row's created_at in microseconds since the epoch, a dot, its id (both within a bigint).
_CURSOR = re.compile(r"(-?[0-9]{1,17})\.([1-9][0-9]{0,17})")


def cursor_of(row: Any) -> str:
    moment = row.created_at
    return f"{(moment - _EPOCH) // timedelta(microseconds=1)}.{row.pk}"


def cursor_position(cursor: str) -> tuple[datetime, int] | None:
    """The (created_at, pk) a cursor names, or None for anything that is not one (a hand-edited link reads the
    newest page rather than failing)."""
    match = _CURSOR.fullmatch(cursor)
    if match is None:
        return None
    try:
        moment = _EPOCH + timedelta(microseconds=int(match[1]))
    except OverflowError:
        return None
    return moment, int(match[2])


def keyset_page(rows: QuerySet[Model], *, before: str = "", after: str = "", per_page: int) -> KeysetPage:
    """The page of `rows` (newest first) just older than the `before` cursor, just newer than `after`, or the
    newest. Reads per_page + 1 rows to know whether there is a page beyond, and one index probe for the other side
    when it came from a cursor."""
    older_than = cursor_position(before) if before else None
    newer_than = cursor_position(after) if after and older_than is None else None
    if newer_than is not None:
        moment, pk = newer_than
        newer_rows = rows.filter(Q(created_at__gt=moment) | Q(created_at=moment, pk__gt=pk))
        found = list(newer_rows.order_by("created_at", "pk")[: per_page + 1])
        more_newer = len(found) > per_page
        page = found[:per_page][::-1]
        more_older = bool(page) and _older_than(rows, page[-1]).exists()
    else:
        if older_than is not None:
            moment, pk = older_than
            rows_from = rows.filter(Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=pk))
        else:
            rows_from = rows
        found = list(rows_from.order_by("-created_at", "-pk")[: per_page + 1])
        more_older = len(found) > per_page
        page = found[:per_page]
        more_newer = older_than is not None and bool(page) and _newer_than(rows, page[0]).exists()
    return KeysetPage(
        rows=page,
        newer=cursor_of(page[0]) if more_newer else "",
        older=cursor_of(page[-1]) if more_older else "",
    )


def _older_than(rows: QuerySet[Model], row: Any) -> QuerySet[Model]:
    return rows.filter(Q(created_at__lt=row.created_at) | Q(created_at=row.created_at, pk__lt=row.pk))


def _newer_than(rows: QuerySet[Model], row: Any) -> QuerySet[Model]:
    return rows.filter(Q(created_at__gt=row.created_at) | Q(created_at=row.created_at, pk__gt=row.pk))
