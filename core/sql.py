"""INSERTs of the hot paths in as few round trips and flushes as the database allows.

insert_pair: two dependent rows in one statement. On PostgreSQL a data-modifying CTE inserts the first row and the
second refers to its id, so the pair commits together in one round trip without BEGIN and COMMIT (a click and its
new customer, a commission and its ledger credit).

insert_unflushed: one row whose commit does not wait for the WAL flush, when a later commit of the same request
flushes it anyway (a sale, before its commission).

The INSERTs write what save() writes: every concrete column but the auto primary key, each value through the
field's pre_save (auto_now) and get_db_prep_save (JSON, dates), as Django's insert compiler does
(tests/core/test_sql.py compares the two). The statement's text depends only on the models, so it is built
once per process and PostgreSQL plans it once per connection (prepared statements)."""

from functools import cache
from typing import Any

from django.db import connections
from django.db.models import Field, Model

FIRST_ROW = "first_row"
# In the RETURNING list of a statement run in autocommit: its commit does not wait for the WAL flush.
# set_config(..., true) lasts for the statement's own transaction only; the session keeps its setting.
UNFLUSHED = "(SELECT set_config('synchronous_commit', 'off', true))"


def insert_pair_supported(using: str = "default") -> bool:
    """SQLite has no INSERT inside WITH: callers write the two rows in a transaction there."""
    return connections[using].vendor == "postgresql"


def _column(field: Field) -> str:
    assert field.column is not None  # a concrete field has a column
    return field.column


def inserted_fields(model: type[Model]) -> list[Field]:
    """The columns save() inserts: every concrete one but generated ones and the auto primary key."""
    meta = model._meta
    return [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]


def insert_sql(model: type[Model], *, using: str = "default", values_sql: dict[str, str] | None = None) -> str:
    """INSERT INTO the model's table, one %s per inserted column, except the columns `values_sql` gives as SQL."""
    quote = connections[using].ops.quote_name
    values_sql = values_sql or {}
    fields = inserted_fields(model)
    columns = ", ".join(quote(_column(f)) for f in fields)
    values = ", ".join(values_sql.get(f.attname, "%s") for f in fields)
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({values})"


def insert_params(obj: Model, *, using: str = "default", skip: frozenset[str] = frozenset()) -> list[Any]:
    """The values of insert_sql's %s, in order, as save() would send them."""
    connection = connections[using]
    params = []
    for field in inserted_fields(type(obj)):
        if field.attname in skip:
            continue
        value = field.pre_save(obj, add=True)
        if hasattr(value, "resolve_expression"):
            raise TypeError(f"{field.attname}: an expression cannot be inserted by insert_pair")
        params.append(field.get_db_prep_save(value, connection))
    return params


@cache
def _pair_sql(first: type[Model], second: type[Model], refers: tuple[tuple[str, str], ...], using: str) -> str:
    quote = connections[using].ops.quote_name
    first_pk = quote(_column(first._meta.pk))
    first_id = f"(SELECT {first_pk} FROM {FIRST_ROW})"
    second_sql = insert_sql(
        second, using=using, values_sql={attname: template.format(first_id=first_id) for attname, template in refers}
    )
    columns = {field.attname: quote(_column(field)) for field in second._meta.concrete_fields}
    returning = ", ".join([first_id, quote(_column(second._meta.pk)), *(columns[attname] for attname, _ in refers)])
    first_sql = insert_sql(first, using=using)
    return f"WITH {FIRST_ROW} AS ({first_sql} RETURNING {first_pk}) {second_sql} RETURNING {returning}"


def insert_pair(first: Model, second: Model, *, refers: dict[str, str], using: str = "default") -> None:
    """Inserts `first`, then `second`, in one statement (PostgreSQL only: see insert_pair_supported). `refers`
    gives attributes of `second` as SQL over `{first_id}`, the id of the row just inserted (a foreign key to
    it, a text naming it; a literal % written %%); their stored values are read back. Sets both primary keys
    and marks both instances saved, as save() would."""
    sql = _pair_sql(type(first), type(second), tuple(refers.items()), using)
    params = [*insert_params(first, using=using), *insert_params(second, using=using, skip=frozenset(refers))]
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    assert row is not None  # an INSERT ... VALUES with RETURNING answers its row
    first.pk, second.pk = row[0], row[1]
    for attname, value in zip(refers, row[2:], strict=True):
        setattr(second, attname, value)
    for obj in (first, second):
        obj._state.adding = False
        obj._state.db = using


def insert_unflushed(obj: Model, *, using: str = "default") -> None:
    """Inserts `obj` in autocommit, in one statement whose commit does not wait for the WAL flush (PostgreSQL
    only: see insert_pair_supported). set_config(..., true) turns synchronous_commit off for that statement's
    own transaction only; the session keeps its setting. The row is visible, and constraints hold, at once; it
    is durable with the next commit that waits for the flush (WAL is flushed in order), or within the WAL
    writer's delay. Sets the primary key and marks the instance saved, as save() would."""
    connection = connections[using]
    # Inside a transaction the setting would reach every statement of the caller's transaction.
    assert not connection.in_atomic_block, "insert_unflushed runs in autocommit only"
    pk = connection.ops.quote_name(_column(obj._meta.pk))
    sql = f"{insert_sql(type(obj), using=using)} RETURNING {pk}, {UNFLUSHED}"
    with connection.cursor() as cursor:
        cursor.execute(sql, insert_params(obj, using=using))
        row = cursor.fetchone()
    assert row is not None  # an INSERT ... VALUES with RETURNING answers its row
    obj.pk = row[0]
    obj._state.adding = False
    obj._state.db = using
