"""insight's hand-written SQL (tests/core/test_sql_homes.py): the readiness checklist's and the overview's reads of
the clicks set aside lately. Each statement says, in the comment above it, why it is not the ORM; the callers run
them (insight.readiness)."""

from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import BooleanField, IntegerField
from django.db.models.expressions import RawSQL

from tracking.models import ClickEvent
from tracking.selectors.clicks import MARKED_CLICKS, NEWEST_FIRST


# Not the ORM: the latest marked clicks are a subquery with its own LIMIT, which the planner cannot flatten: it reads
# them off the partial index first, then filters those. (As the ORM's `id IN (...)` with the filters outside,
# PostgreSQL scanned every click of the table for bots, measured.)
def recent_set_aside_sql(
    program_id: int, *, now: datetime, select: str, traffic: str, days: int, scan: int
) -> tuple[str, list[Any]]:
    """SELECT `select` from the live clicks set aside for `traffic` within `days` among the program's latest `scan`
    marked clicks, with its parameters."""
    latest = (
        ClickEvent.objects.filter(MARKED_CLICKS, program_id=program_id)
        .order_by(NEWEST_FIRST)
        .values("traffic", "is_test", "click_timestamp", "user_agent")[:scan]
    )
    latest_sql, latest_params = latest.query.sql_with_params()
    since = connection.ops.adapt_datetimefield_value(now - timedelta(days=days))
    sql = (
        f"SELECT {select} FROM ({latest_sql}) AS recent "
        "WHERE recent.traffic = %s AND NOT recent.is_test AND recent.click_timestamp >= %s"
    )
    return sql, [*latest_params, str(traffic), since]


# Not the ORM: grouped over recent_set_aside_sql's subquery, which the ORM cannot select from.
def user_agents_counted_sql(recent_sql: str) -> str:
    """recent_set_aside_sql's user agents (selected as `recent.user_agent, COUNT(*)`) with their counts, most
    frequent first."""
    return f"{recent_sql} GROUP BY recent.user_agent ORDER BY COUNT(*) DESC, recent.user_agent"


# Not the ORM: several of those counts in one round trip, as one row of scalar subqueries.
def one_row_sql(subqueries: list[str]) -> str:
    return "SELECT " + ", ".join(f"({sql})" for sql in subqueries)


# Not the ORM: recent_set_aside_sql as an annotation of the program's one-query read (the ORM takes no raw subquery
# as an expression otherwise).
def exists_annotation(sql: str, params: list[Any]) -> RawSQL:
    return RawSQL(f"EXISTS ({sql})", params, output_field=BooleanField())


# Not the ORM: as above, a count.
def count_annotation(sql: str, params: list[Any]) -> RawSQL:
    return RawSQL(f"({sql})", params, output_field=IntegerField())
