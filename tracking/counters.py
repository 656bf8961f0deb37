"""Running counters on the lead path, as single UPDATE ... SET n = n + k statements (no read-modify-write race).
These are among the busiest statements of the service and always the same, so their SQL is written once here
instead of being rebuilt by the ORM on every lead; table and column names come from the models, and the SQL is
standard (SQLite and PostgreSQL). Clicks and sales update no counter row themselves: the rollup run adds them to
the counters (tracking.insight.rollups)."""

from functools import cache

from django.db import connection
from django.db.models import Model

from programs.models import PartnerProgram


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def _partner_program_sql(columns: tuple[str, ...]) -> str:
    assignments = ", ".join(f'"{column}" = "{column}" + %s' for column in columns)
    return f'UPDATE {_table(PartnerProgram)} SET {assignments} WHERE "partner_id" = %s AND "program_id" = %s'


def partner_program_add(*, partner_id: int, program_id: int, **amounts: int) -> int:
    """Adds to the partner-program metrics (leads). Commission money has no counter: it changes with refunds, so
    it is always read from the commissions (commissions.selectors). Returns the number of rows changed: 0 when the
    partner is not enrolled in the program."""
    columns = tuple(sorted(amounts))
    with connection.cursor() as cursor:
        cursor.execute(_partner_program_sql(columns), [*(amounts[c] for c in columns), partner_id, program_id])
        return cursor.rowcount
