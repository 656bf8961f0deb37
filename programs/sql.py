"""programs' hand-written SQL (tests/core/test_sql_homes.py): the program-key lookup every program-key call starts
with. Each statement says, in the comment above it, why it is not the ORM; the callers run them
(programs.selectors)."""

from functools import cache

from core.sql import select_columns_sql

from .models import Program, ProgramKey


# Not the ORM: the select list of the key lookup below, which a caller may join more to (one round trip for two
# reads): the columns program_key_from_row reads, in order, the key's, then its program's. The caller selects these
# first and the rest after KEY_WITH_PROGRAM_COLUMNS.
def key_with_program_select() -> str:
    return f"{select_columns_sql(ProgramKey, 'k')}, {select_columns_sql(Program, 'p')}"


KEY_WITH_PROGRAM_COLUMNS = len(ProgramKey._meta.concrete_fields) + len(Program._meta.concrete_fields)


# Not the ORM: every program-key call's first query, written once per process: the ORM compiled this join (about 40
# columns) again on every call.
@cache
def key_with_program_sql() -> str:
    """The key whose digest is %s, its program joined. digest is unique: no ORDER BY is needed."""
    keys, programs = ProgramKey._meta.db_table, Program._meta.db_table
    return (
        f"SELECT {key_with_program_select()} "
        f'FROM "{keys}" AS k JOIN "{programs}" AS p ON p."id" = k."program_id" WHERE k."digest" = %s LIMIT 1'
    )
