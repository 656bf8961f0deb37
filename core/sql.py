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
once per process and PostgreSQL plans it once per connection (prepared statements).

Every database writes the same rows: what a statement may use is decided once per database alias (capabilities).
On PostgreSQL a family is one statement; elsewhere (SQLite, 3.35+: INSERT ... RETURNING, INSERT ... SELECT ...
WHERE) the same INSERTs run one row at a time in one transaction, each dependent's SQL over the ids already
inserted, the guard checked by the first row's INSERT, and `unflushed` does nothing. rows_copy is COPY on
PostgreSQL and a multi-row INSERT elsewhere. A writer's caller does not ask which; one that uses more (a LATERAL
join, a statement that commits by itself) asks capabilities or family_commits_alone, here.

These rows never go through save(): no pre_save or post_save signal is sent for them, on any database. So no
receiver may be connected to a model written here: WRITTEN_BY_HAND lists them, the writers refuse a model it does
not list, and tests/core/test_sql.py fails when a save signal has a receiver for one of them."""

import time
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, TypeAlias

from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction
from django.db.models import BooleanField, CharField, Field, ForeignKey, IntegerField, JSONField, Model, TextField
from django.db.models.fields import AutoFieldMixin

FIRST_ROW = "first_row"
# In the RETURNING list of a statement run in autocommit: its commit does not wait for the WAL flush.
# set_config(..., true) lasts for the statement's own transaction only; the session keeps its setting.
UNFLUSHED = "(SELECT set_config('synchronous_commit', 'off', true))"

# The models whose rows are written here, without save() (app_label.ModelName): a save signal's receiver connected
# to one of them would never run for those rows. Listed by label, as core imports no feature app.
WRITTEN_BY_HAND = frozenset(
    {
        "tracking.Customer",  # a new visitor's, with its click (tracking.services.click)
        "tracking.ClickEvent",
        "tracking.SaleEvent",  # with its sale.created event (tracking.services.sale, settlement)
        "commissions.Commission",  # with its ledger and review entries and events (commissions.approval)
        "commissions.LedgerEntry",
        "commissions.CommissionReview",
        "webhooks.WebhookEvent",
        "programs.ApiCall",  # the request log's batches (programs.calllog, rows_copy)
    }
)


def _written_by_hand(model: type[Model]) -> None:
    if model._meta.label not in WRITTEN_BY_HAND:
        raise TypeError(
            f"{model._meta.label} is not in core.sql.WRITTEN_BY_HAND: list it there (no save signal reaches "
            "the rows written here, so no receiver may be connected to it)"
        )


# --- What a database offers the statements -----------------------------------------------------------------------


@dataclass(frozen=True)
class Capabilities:
    """What the statements written here may use on one database (capabilities decides it once per alias)."""

    # INSERT inside WITH: insert_family's rows are one statement, which in autocommit commits by itself.
    insert_in_with: bool
    # LEFT JOIN LATERAL: a read that joins a second one in the same round trip.
    lateral_join: bool
    # COPY ... FROM STDIN: rows_copy's batch without a value adapted per field.
    copy_from: bool
    # synchronous_commit per transaction: a commit that need not wait for the WAL flush (UNFLUSHED).
    unflushed_commit: bool


POSTGRESQL = Capabilities(insert_in_with=True, lateral_join=True, copy_from=True, unflushed_commit=True)
# SQLite: a row at a time, in a transaction (INSERT ... RETURNING and INSERT ... SELECT ... WHERE since 3.35).
PORTABLE = Capabilities(insert_in_with=False, lateral_join=False, copy_from=False, unflushed_commit=False)

# Per database alias, from its backend's vendor (which settings fix for the process).
_capabilities: dict[str, Capabilities] = {}


def capabilities(using: str = "default") -> Capabilities:
    """What the database `using` offers (decided on the first call for the alias, then kept)."""
    found = _capabilities.get(using)
    if found is None:
        connection = connections[using]
        if connection.vendor != "postgresql" and not connection.features.can_return_columns_from_insert:
            raise ImproperlyConfigured(f"core.sql writes with INSERT ... RETURNING, which {connection.vendor} lacks")
        found = _capabilities[using] = POSTGRESQL if connection.vendor == "postgresql" else PORTABLE
    return found


def family_commits_alone(using: str = "default") -> bool:
    """Whether insert_family, called now, is one statement that commits by itself: INSERT inside WITH, in
    autocommit. One round trip and no BEGIN and COMMIT; elsewhere, or inside a transaction, it is not."""
    return capabilities(using).insert_in_with and not connections[using].in_atomic_block


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
        _written_by_hand(model)
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
    savepoint: bool = False,
    using: str = "default",
) -> bool:
    """Inserts `first`, then each dependent; they commit together or not at all. Each dependent's dict gives
    attributes of it as SQL over `{first_id}`, the id of the row just inserted (a foreign key to it, a text naming
    it; a literal % written %%), or over `{dependent_N_id}`, the id of the Nth dependent (from 1) listed before
    it, or as an SqlValue, SQL with parameters of its own (a value decided by a subquery); their stored values are
    read back. Sets every primary key and marks every instance saved, as save() would, and answers True. `guard`:
    SQL condition with its parameters, checked as the first row is inserted; when it does not hold nothing is
    inserted, the instances stay unsaved and the answer is False.

    On PostgreSQL one statement, atomic by itself (in autocommit: no BEGIN and COMMIT); elsewhere the INSERTs one
    row at a time in a transaction. `savepoint`: inside a caller's transaction, in a savepoint of its own, so a
    failure (a duplicate the caller catches) leaves the caller's transaction usable; without it a failure undoes
    the caller's transaction with it. `unflushed` (in autocommit only): the commit does not wait for the WAL
    flush (see insert_unflushed), where the database has that setting."""
    connection = connections[using]
    assert not (unflushed and connection.in_atomic_block), "an unflushed insert runs in autocommit only"
    able = capabilities(using)
    if not able.insert_in_with:
        with transaction.atomic(using=using, savepoint=savepoint):
            inserted = _family_rows(first, dependents, guard=guard, using=using)
    else:
        shape = tuple(
            (type(obj), tuple((attname, _template(value)) for attname, value in refers.items()))
            for obj, refers in dependents
        )
        sql = _family_sql(
            type(first), shape, using, unflushed and able.unflushed_commit, None if guard is None else guard[0]
        )
        params = insert_params(first, using=using)
        if guard is not None:
            params.extend(guard[1])
        for obj, refers in dependents:
            params.extend(insert_params(obj, using=using, skip=refers))
        # In autocommit the statement is its own transaction; inside one, a savepoint only when asked.
        with transaction.atomic(using=using) if savepoint and connection.in_atomic_block else nullcontext():
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
        inserted = True
    if inserted:
        for obj in (first, *(obj for obj, _ in dependents)):
            obj._state.adding = False
            obj._state.db = using
    return inserted


def _family_rows(
    first: Model,
    dependents: "list[tuple[Model, dict[str, str | SqlValue]]]",
    *,
    guard: "SqlValue | None",
    using: str,
) -> bool:
    """insert_family a row at a time, in the caller's transaction: each dependent's SQL names the ids inserted
    before it as numbers. The guard is the first row's INSERT ... SELECT ... WHERE, as in the one statement. The
    instances are set once every row is in."""
    first_row = _row_insert(first, {}, {}, using=using, guard=guard)
    if first_row is None:
        return False
    # int(): an id is written into the SQL as a number, never as text from elsewhere.
    ids = {"first_id": str(int(first_row[0]))}
    rows = []
    for index, (obj, refers) in enumerate(dependents, start=1):
        row = _row_insert(obj, refers, ids, using=using)
        assert row is not None  # no guard: INSERT ... VALUES with RETURNING answers its row
        ids[f"dependent_{index}_id"] = str(int(row[0]))
        rows.append(row)
    first.pk = first_row[0]
    for (obj, refers), row in zip(dependents, rows, strict=True):
        obj.pk = row[0]
        for offset, attname in enumerate(refers, start=1):
            setattr(obj, attname, row[offset])
    return True


def _row_insert(
    obj: Model,
    refers: "dict[str, str | SqlValue]",
    ids: dict[str, str],
    *,
    using: str,
    guard: "SqlValue | None" = None,
) -> "tuple[Any, ...] | None":
    """Inserts `obj` alone, the attributes `refers` gives as SQL over `ids`: its primary key and those attributes
    as stored (None: the guard did not hold, nothing inserted)."""
    connection = connections[using]
    quote = connection.ops.quote_name
    columns = {field.attname: quote(_column(field)) for field in type(obj)._meta.concrete_fields}
    returned = [quote(_column(obj._meta.pk)), *(columns[attname] for attname in refers)]
    values_sql = {attname: _template(value).format(**ids) for attname, value in refers.items()}
    where = None if guard is None else guard[0]
    sql = f"{insert_sql(type(obj), using=using, values_sql=values_sql, where=where)} RETURNING {', '.join(returned)}"
    params = insert_params(obj, using=using, skip=refers)
    if guard is not None:
        params.extend(guard[1])
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else tuple(row)


def insert_pair(
    first: Model,
    second: Model,
    *,
    refers: "dict[str, str | SqlValue]",
    guard: "SqlValue | None" = None,
    savepoint: bool = False,
    using: str = "default",
) -> bool:
    """Inserts `first`, then `second`: insert_family with one dependent."""
    return insert_family(first, [(second, refers)], guard=guard, savepoint=savepoint, using=using)


def insert_unflushed(obj: Model, *, using: str = "default") -> None:
    """Inserts `obj` in autocommit, in one statement whose commit does not wait for the WAL flush (where the
    database has that setting; elsewhere a plain INSERT). set_config(..., true) turns synchronous_commit off for
    that statement's own transaction only; the session keeps its setting. The row is visible, and constraints
    hold, at once; it is durable with the next commit that waits for the flush (WAL is flushed in order), or
    within the WAL writer's delay. Sets the primary key and marks the instance saved, as save() would."""
    connection = connections[using]
    # Inside a transaction the setting would reach every statement of the caller's transaction.
    assert not connection.in_atomic_block, "insert_unflushed runs in autocommit only"
    if capabilities(using).unflushed_commit:
        pk = connection.ops.quote_name(_column(obj._meta.pk))
        sql = f"{insert_sql(type(obj), using=using)} RETURNING {pk}, {UNFLUSHED}"
        with connection.cursor() as cursor:
            cursor.execute(sql, insert_params(obj, using=using))
            row = cursor.fetchone()
    else:
        row = _row_insert(obj, {}, {}, using=using)
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
    model's table: one COPY on PostgreSQL, where a batch of log rows costs a tenth of the CPU bulk_create spends
    adapting each value through its field; elsewhere multi-row INSERTs (in one transaction when the batch takes
    several), each value but the JSON text through its field, as bulk_create stores it. Errors of the database are
    Django's DatabaseError."""
    _written_by_hand(model)
    connection = connections[using]
    quote = connection.ops.quote_name
    fields = {field.attname: field for field in model._meta.concrete_fields}
    columns = ", ".join(quote(_column(fields[attname])) for attname in attnames)
    if not capabilities(using).copy_from:
        _rows_insert(model, [fields[attname] for attname in attnames], columns, rows, using=using)
        return
    sql = f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN"
    started = time.monotonic()
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
    if connection.queries_logged:
        # As Django's debug cursor logs a statement: query counts and captures see the COPY.
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})


def _rows_insert(
    model: type[Model], fields: list[ModelField], columns: str, rows: "list[tuple[Any, ...]]", *, using: str
) -> None:
    connection = connections[using]
    json_columns = [isinstance(field, JSONField) for field in fields]
    prepared = [
        [
            value if is_json else field.get_db_prep_save(value, connection)
            for field, is_json, value in zip(fields, json_columns, row, strict=True)
        ]
        for row in rows
    ]
    per_statement = max(1, connection.ops.bulk_batch_size(fields, prepared))
    table = connection.ops.quote_name(model._meta.db_table)
    placeholders = "(" + ", ".join("%s" for _ in fields) + ")"
    several = len(prepared) > per_statement
    with transaction.atomic(using=using, savepoint=False) if several else nullcontext():
        with connection.cursor() as cursor:
            for start in range(0, len(prepared), per_statement):
                batch = prepared[start : start + per_statement]
                values = ", ".join(placeholders for _ in batch)
                cursor.execute(
                    f"INSERT INTO {table} ({columns}) VALUES {values}", [value for row in batch for value in row]
                )
