"""Two dependent rows in one statement: on PostgreSQL a data-modifying CTE inserts the first row and the second
refers to its id, so the pair commits together in one round trip without BEGIN and COMMIT. The INSERTs are
compiled by Django from the model instances, exactly as save() would write them (defaults, auto_now, JSON);
the hot paths (a click and its new customer, a commission and its ledger credit) use it."""

from typing import Any

from django.db import connections
from django.db.models import Field, Model
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery

FIRST_ROW = "first_row"


def insert_pair_supported(using: str = "default") -> bool:
    """SQLite has no INSERT inside WITH: callers write the two rows in a transaction there."""
    return connections[using].vendor == "postgresql"


def _column(field: Field) -> str:
    assert field.column is not None  # a concrete field has a column
    return field.column


def _insert_sql(obj: Model, using: str) -> tuple[str, list[Any]]:
    meta = obj._meta
    fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
    query = InsertQuery(type(obj))
    query.insert_values(fields, [obj])
    [(sql, params)] = query.get_compiler(using=using).as_sql()
    return sql, list(params)


def insert_pair(first: Model, second: Model, *, refers: dict[str, str], using: str = "default") -> None:
    """Inserts `first`, then `second`, in one statement (PostgreSQL only: see insert_pair_supported). `refers`
    gives attributes of `second` as SQL over `{first_id}`, the id of the row just inserted (a foreign key to
    it, a text naming it); their stored values are read back. Sets both primary keys and marks both instances
    saved, as save() would."""
    connection = connections[using]
    quote = connection.ops.quote_name
    first_pk = quote(_column(first._meta.pk))
    first_id = f"(SELECT {first_pk} FROM {FIRST_ROW})"
    first_sql, first_params = _insert_sql(first, using)
    for attname, template in refers.items():
        setattr(second, attname, RawSQL(template.format(first_id=first_id), ()))
    try:
        second_sql, second_params = _insert_sql(second, using)
    finally:
        for attname in refers:
            setattr(second, attname, None)
    columns = {field.attname: quote(_column(field)) for field in second._meta.concrete_fields}
    returning = ", ".join([first_id, quote(_column(second._meta.pk)), *(columns[attname] for attname in refers)])
    sql = f"WITH {FIRST_ROW} AS ({first_sql} RETURNING {first_pk}) {second_sql} RETURNING {returning}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*first_params, *second_params])
        row = cursor.fetchone()
    assert row is not None  # an INSERT ... VALUES with RETURNING answers its row
    first.pk, second.pk = row[0], row[1]
    for attname, value in zip(refers, row[2:], strict=True):
        setattr(second, attname, value)
    for obj in (first, second):
        obj._state.adding = False
        obj._state.db = using
