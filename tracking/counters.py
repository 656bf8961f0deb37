"""Running counters on the lead and sale paths, as single UPDATE ... SET n = n + k statements (no read-modify-write
race). These are the busiest statements of the service and always the same, so their SQL is written once
here instead of being rebuilt by the ORM on every click and sale; table and column names come from the
models, and the SQL is standard (SQLite and PostgreSQL)."""

from functools import cache

from django.db import connection
from django.db.models import Model

from core.sql import UNFLUSHED
from programs.models import PartnerProgram


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def _partner_program_sql(columns: tuple[str, ...]) -> str:
    assignments = ", ".join(f'"{column}" = "{column}" + %s' for column in columns)
    return f'UPDATE {_table(PartnerProgram)} SET {assignments} WHERE "partner_id" = %s AND "program_id" = %s'


def partner_program_add(*, partner_id: int, program_id: int, unflushed: bool = False, **amounts: int) -> int:
    """Adds to the partner-program metrics (clicks, leads, sales, revenue_cents). Commission money has no
    counter: it changes with refunds, so it is always read from the commissions (commissions.selectors).
    Returns the number of rows changed: 0 when the partner is not enrolled in the program. `unflushed`
    (autocommit, PostgreSQL): the UPDATE's commit does not wait for the WAL flush (core.sql.UNFLUSHED)."""
    columns = tuple(sorted(amounts))
    sql = _partner_program_sql(columns)
    # Inside a transaction the setting would reach the whole of it: there the commit decides.
    if unflushed and connection.vendor == "postgresql" and not connection.in_atomic_block:
        sql += f" RETURNING {UNFLUSHED}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*(amounts[c] for c in columns), partner_id, program_id])
        return cursor.rowcount
