"""INSERTs of the hot paths in as few round trips and flushes as the database allows.

insert_pair: two dependent rows in one statement. On PostgreSQL a data-modifying CTE inserts the first row and the
second refers to its id, so the pair commits together in one round trip without BEGIN and COMMIT (a click and its
new customer, a commission and its ledger credit).

insert_family: a row and several rows that refer to it, the same way (a commission, its ledger credit and the
webhook events announcing it).

insert_unflushed: one row whose commit does not wait for the WAL flush, when a later commit of the same request
flushes it anyway (a sale, before its commission).

The INSERTs write what save() writes: every concrete column but the auto primary key, each value through the
field's pre_save (auto_now) and get_db_prep_save (JSON, dates), as Django's insert compiler does
(tests/core/test_sql.py compares the two). The statement's text depends only on the models, so it is built
once per process and PostgreSQL plans it once per connection (prepared statements)."""

import time
from functools import cache, lru_cache
from typing import Any, TypeAlias

from django.db import connections
from django.db.models import BooleanField, CharField, Field, ForeignKey, IntegerField, Model, TextField
from django.db.models.fields import AutoFieldMixin

FIRST_ROW = "first_row"
# In the RETURNING list of a statement run in autocommit: its commit does not wait for the WAL flush.
# set_config(..., true) lasts for the statement's own transaction only; the session keeps its setting.
UNFLUSHED = "(SELECT set_config('synchronous_commit', 'off', true))"


def insert_pair_supported(using: str = "default") -> bool:
    """SQLite has no INSERT inside WITH: callers write the two rows in a transaction there."""
    return connections[using].vendor == "postgresql"


# A model field of any value type: an insert's columns are of every kind.
ModelField: TypeAlias = Field[Any, Any]


def _column(field: ModelField) -> str:
    assert field.column is not None  # a concrete field has a column
    return field.column


_inserted_fields: dict[type[Model], tuple[ModelField, ...]] = {}


def inserted_fields(model: type[Model]) -> tuple[ModelField, ...]:
    """The columns save() inserts: every concrete one but generated ones and the auto primary key (fixed per
    model, so worked out once per process: insert_params asks on every hot-path INSERT)."""
    fields = _inserted_fields.get(model)
    if fields is None:
        meta = model._meta
        fields = _inserted_fields[model] = tuple(
            f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field
        )
    return fields


def insert_sql(
    model: type[Model], *, using: str = "default", values_sql: dict[str, str] | None = None, where: str | None = None
) -> str:
    """INSERT INTO the model's table, one %s per inserted column, except the columns `values_sql` gives as SQL.
    With `where`, the row is inserted only when that condition holds (INSERT ... SELECT ... WHERE)."""
    quote = connections[using].ops.quote_name
    values_sql = values_sql or {}
    fields = inserted_fields(model)
    columns = ", ".join(quote(_column(f)) for f in fields)
    values = ", ".join(values_sql.get(f.attname, "%s") for f in fields)
    table = quote(model._meta.db_table)
    if where is not None:
        # PostgreSQL types the select list's parameters from the target columns, as it does VALUES'.
        return f"INSERT INTO {table} ({columns}) SELECT {values} WHERE {where}"
    return f"INSERT INTO {table} ({columns}) VALUES ({values})"


# A column's value as SQL with its own parameters: (SQL with %s placeholders, their values).
SqlValue = tuple[str, list[Any]]


def _template(value: "str | SqlValue") -> str:
    return value if isinstance(value, str) else value[0]


# How insert_params prepares a column's value: the field's own get_db_prep_save, unless the value is of the one type
# for which Django's chain of calls (get_db_prep_save, get_db_prep_value, get_prep_value, to_python) is known to
# return it unchanged, or wrapped by the backend's integer adapter. A sale inserts some 80 values, a click 40: the
# chain cost several microseconds each. A field class that overrides any step of the chain takes the full chain.
_GENERIC, _TEXT, _BOOLEAN, _INTEGER, _AUTO_KEY = range(5)


def _same_chain(field: ModelField, base: type[ModelField], *names: str) -> bool:
    return all(getattr(type(field), name) is getattr(base, name) for name in ("get_db_prep_save", *names))


def _value_kind(field: ModelField) -> int:
    if isinstance(field, ForeignKey):
        # A key to an auto id: get_prep_value (int()), then the backend's validate_autopk_value, which PostgreSQL and
        # SQLite leave as it is.
        target = field.target_field
        plain_target = (
            isinstance(target, AutoFieldMixin)
            and isinstance(target, IntegerField)
            and _same_chain(target, Field)
            and type(target).get_db_prep_value is AutoFieldMixin.get_db_prep_value
            and type(target).get_prep_value is IntegerField.get_prep_value
        )
        plain_key = type(field).get_db_prep_save is ForeignKey.get_db_prep_save
        return _AUTO_KEY if plain_key and plain_target else _GENERIC
    if isinstance(field, CharField) and _same_chain(
        field, CharField, "get_db_prep_value", "get_prep_value", "to_python"
    ):
        return _TEXT
    if isinstance(field, TextField) and _same_chain(
        field, TextField, "get_db_prep_value", "get_prep_value", "to_python"
    ):
        return _TEXT
    boolean_chain = ("get_db_prep_value", "get_prep_value", "to_python")
    if isinstance(field, BooleanField) and _same_chain(field, BooleanField, *boolean_chain):
        return _BOOLEAN
    if isinstance(field, IntegerField) and not isinstance(field, AutoFieldMixin):
        if _same_chain(field, IntegerField, "get_db_prep_value", "get_prep_value"):
            return _INTEGER
    return _GENERIC


_FAST_TYPES = {_TEXT: str, _BOOLEAN: bool, _INTEGER: int, _AUTO_KEY: int}
_insert_plans: dict[type[Model], tuple[tuple[ModelField, str, bool, int, str], ...]] = {}


def _insert_plan(model: type[Model]) -> tuple[tuple[ModelField, str, bool, int, str], ...]:
    """Per inserted field: the field, its attname, whether save() reads it through a pre_save of its own
    (auto_now), how its value is prepared, and its internal type (for the integer adapter)."""
    plan = _insert_plans.get(model)
    if plan is None:
        plan = _insert_plans[model] = tuple(
            (
                field,
                field.attname,
                type(field).pre_save is not Field.pre_save,
                _value_kind(field),
                field.get_internal_type(),
            )
            for field in inserted_fields(model)
        )
    return plan


def insert_params(
    obj: Model, *, using: str = "default", skip: "frozenset[str] | dict[str, str | SqlValue]" = frozenset()
) -> list[Any]:
    """The values of insert_sql's %s, in order, as save() would send them. A column in `skip` is given as SQL
    instead: it sends nothing, or the parameters of its SqlValue."""
    connection = connections[using]
    adapt_integer = connection.ops.adapt_integerfield_value
    params = []
    for field, attname, own_pre_save, kind, internal_type in _insert_plan(type(obj)):
        if attname in skip:
            given = skip[attname] if isinstance(skip, dict) else ""
            if not isinstance(given, str):
                params.extend(given[1])
            continue
        value = field.pre_save(obj, add=True) if own_pre_save else getattr(obj, attname)
        if value is None and kind != _GENERIC:
            params.append(None)
        elif kind != _GENERIC and type(value) is _FAST_TYPES[kind]:
            params.append(adapt_integer(value, internal_type) if kind == _INTEGER else value)
        else:
            if hasattr(value, "resolve_expression"):
                raise TypeError(f"{attname}: an expression cannot be inserted by insert_pair")
            params.append(field.get_db_prep_save(value, connection))
    return params


@cache
def _family_sql(
    first: type[Model],
    dependents: tuple[tuple[type[Model], tuple[tuple[str, str], ...]], ...],
    using: str,
    unflushed: bool,
    guard: str | None = None,
) -> str:
    quote = connections[using].ops.quote_name
    first_pk = quote(_column(first._meta.pk))
    first_id = f"(SELECT {first_pk} FROM {FIRST_ROW})"
    ctes = [f"{FIRST_ROW} AS ({insert_sql(first, using=using, where=guard)} RETURNING {first_pk})"]
    # Under a guard the first row may not be inserted; then neither is any dependent.
    dependent_where = f"EXISTS (SELECT 1 FROM {FIRST_ROW})" if guard is not None else None
    selected = [first_id]
    # What a dependent's SQL may name: the first row's id, and the id of each dependent before it.
    ids = {"first_id": first_id}
    for index, (model, refers) in enumerate(dependents, start=1):
        name = f"dependent_{index}"
        values_sql = {attname: template.format(**ids) for attname, template in refers}
        columns = {field.attname: quote(_column(field)) for field in model._meta.concrete_fields}
        returned = [quote(_column(model._meta.pk)), *(columns[attname] for attname, _ in refers)]
        ctes.append(
            f"{name} AS ({insert_sql(model, using=using, values_sql=values_sql, where=dependent_where)} "
            f"RETURNING {', '.join(returned)})"
        )
        selected.extend(f"{name}.{column}" for column in returned)
        ids[f"{name}_id"] = f"(SELECT {returned[0]} FROM {name})"
    if unflushed:
        selected.append(UNFLUSHED)
    sources = ", ".join(f"dependent_{index}" for index in range(1, len(dependents) + 1))
    return f"WITH {', '.join(ctes)} SELECT {', '.join(selected)} FROM {sources}"


def insert_family(
    first: Model,
    dependents: "list[tuple[Model, dict[str, str | SqlValue]]]",
    *,
    unflushed: bool = False,
    guard: "SqlValue | None" = None,
    using: str = "default",
) -> bool:
    """Inserts `first`, then each dependent, in one statement (PostgreSQL only: see insert_pair_supported). Each
    dependent's dict gives attributes of it as SQL over `{first_id}`, the id of the row just inserted (a foreign
    key to it, a text naming it; a literal % written %%), or over `{dependent_N_id}`, the id of the Nth dependent
    (from 1) listed before it, or as an SqlValue, SQL with parameters of its own (a
    value decided by a subquery); their stored values are read back. `unflushed` (in autocommit only): the
    statement's commit does not wait for the WAL flush (see insert_unflushed). Sets every primary key and marks
    every instance saved, as save() would, and answers True. `guard`: SQL condition with its parameters, checked in
    the same statement; when it does not hold nothing is inserted, the instances stay unsaved and the answer is
    False."""
    connection = connections[using]
    assert not (unflushed and connection.in_atomic_block), "an unflushed insert runs in autocommit only"
    shape = tuple(
        (type(obj), tuple((attname, _template(value)) for attname, value in refers.items()))
        for obj, refers in dependents
    )
    sql = _family_sql(type(first), shape, using, unflushed, None if guard is None else guard[0])
    params = insert_params(first, using=using)
    if guard is not None:
        params.extend(guard[1])
    for obj, refers in dependents:
        params.extend(insert_params(obj, using=using, skip=refers))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        assert guard is not None  # INSERT ... VALUES with RETURNING answers one row each; their product is one row
        return False
    first.pk = row[0]
    position = 1
    for obj, refers in dependents:
        obj.pk = row[position]
        for offset, attname in enumerate(refers, start=1):
            setattr(obj, attname, row[position + offset])
        position += 1 + len(refers)
    for obj in (first, *(obj for obj, _ in dependents)):
        obj._state.adding = False
        obj._state.db = using
    return True


def insert_pair(
    first: Model,
    second: Model,
    *,
    refers: "dict[str, str | SqlValue]",
    guard: "SqlValue | None" = None,
    using: str = "default",
) -> bool:
    """Inserts `first`, then `second`, in one statement: insert_family with one dependent."""
    return insert_family(first, [(second, refers)], guard=guard, using=using)


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


# --- Reading rows without the ORM's compiler ---------------------------------------------------------------------


def select_columns_sql(model: type[Model], alias: str, *, using: str = "default") -> str:
    """The model's concrete columns, in field order, qualified by `alias`: what model_from_row reads back."""
    quote = connections[using].ops.quote_name
    return ", ".join(f"{alias}.{quote(_column(field))}" for field in model._meta.concrete_fields)


@lru_cache(maxsize=64)
def _row_plan(model: type[Model], connection: Any) -> tuple[list[str], list[tuple[Any, list[Any]]]]:
    # Per connection object: a backend's converters may be bound to its operations.
    attnames, converters = [], []
    for field in model._meta.concrete_fields:
        column = field.get_col(model._meta.db_table)
        attnames.append(field.attname)
        converters.append((column, connection.ops.get_db_converters(column) + column.get_db_converters(connection)))
    return attnames, converters


def model_from_row(model: type[Model], row: "tuple[Any, ...] | list[Any]", *, using: str = "default") -> Model:
    """An instance of `model` from the values of its concrete columns in field order (select_columns_sql), each
    converted as the ORM converts it when it loads the model: for the hot paths' hand-written SELECTs, which the
    ORM would compile again on every call."""
    connection = connections[using]
    attnames, plan = _row_plan(model, connection)
    values = []
    for (column, converters), value in zip(plan, row, strict=True):
        for convert in converters:
            value = convert(value, column, connection)
        values.append(value)
    return model.from_db(using, attnames, values)


# --- Many rows at once -------------------------------------------------------------------------------------------


def rows_copy(
    model: type[Model], attnames: "tuple[str, ...]", rows: "list[tuple[Any, ...]]", *, using: str = "default"
) -> None:
    """Writes `rows` (values of `attnames`, in order, as the database takes them: JSON as its text) into the
    model's table with one COPY (PostgreSQL only: see insert_pair_supported). A batch of log rows costs a tenth of
    the CPU bulk_create spends adapting each value through its field; errors are Django's DatabaseError."""
    connection = connections[using]
    quote = connection.ops.quote_name
    fields = {field.attname: field for field in model._meta.concrete_fields}
    columns = ", ".join(quote(_column(fields[attname])) for attname in attnames)
    sql = f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN"
    started = time.monotonic()
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
    if connection.queries_logged:
        # As Django's debug cursor logs a statement: query counts and captures see the COPY.
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
