from functools import cached_property
from typing import Any

from django.core.paginator import Paginator

# Rows a dashboard list counts at most: a count of every row of a program's busiest table would grow with it.
COUNT_CAP = 10_000


class CappedPaginator(Paginator):
    """A Paginator that counts at most `cap` rows (SELECT COUNT(*) over a LIMIT), so a page costs the same with a
    thousand rows or ten million; past the cap the list says "10000+" and offers the first cap rows' pages."""

    def __init__(self, *args: Any, cap: int = COUNT_CAP, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cap = cap

    @cached_property
    def _bounded_count(self) -> int:
        rows: Any = self.object_list
        return rows[: self.cap + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self._bounded_count, self.cap)

    @property
    def capped(self) -> bool:
        return self._bounded_count > self.cap
