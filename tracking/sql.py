"""tracking's hand-written SQL (tests/core/test_sql_homes.py): statements of the click path and of the running
counters, each built once per process from the models' names. Each says, in the comment above it, why it is not the
ORM; the callers run them (tracking.link_cache, tracking.quality, tracking.counters) or put them in an INSERT of
core.sql's."""

from functools import cache

from django.db import connection
from django.db.models import Model

from core.sql import select_columns_sql
from fraud.click import ClickQuality
from fraud.models import RuleSetting
from fraud.rules import Rule, Traffic
from programs.models import PartnerProgram, Program, ProgramKey, ReferralLink
from programs.sql import key_with_program_select

from .models import ClickEvent, Customer, DailyRollup


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


# --- Clicks ------------------------------------------------------------------------------------------------------


# Not the ORM: a click on a link not cached would otherwise compile the ORM's query each time (the long tail of a
# program's links misses the cache more than it hits it).
@cache
def link_target_sql() -> str:
    """The facts of the link whose short_link is %s in one indexed query (short_link is unique), its program's
    window joined: tracking.link_cache.LinkTarget's fields, in order."""
    link, program = ReferralLink._meta.db_table, Program._meta.db_table
    return (
        f'SELECT link."id", link."short_link", link."partner_id", link."program_id", link."is_active", '
        f'program."cookie_duration" FROM "{link}" AS link LEFT JOIN "{program}" AS program '
        'ON program."id" = link."program_id" WHERE link."short_link" = %s'
    )


# Not the ORM: the guard of a new visitor's click, checked inside its own INSERT (core.sql.insert_pair's guard) so the
# link's facts may come from the process cache; the ORM puts no condition on an INSERT.
def _link_guard_sql() -> str:
    """True while the link's row says what the click was decided from: the link whose id is the first %s still has
    the code (second), is on, has the partner (third) and program (fourth), and its program the window (fifth)."""
    link, program = ReferralLink._meta.db_table, Program._meta.db_table
    return (
        f'EXISTS (SELECT 1 FROM "{link}" AS link JOIN "{program}" AS program ON program."id" = link."program_id" '
        'WHERE link."id" = %s AND link."short_link" = %s AND link."is_active" AND link."partner_id" = %s '
        'AND link."program_id" = %s AND program."cookie_duration" = %s)'
    )


LINK_GUARD_SQL = _link_guard_sql()


# Not the ORM: the duplicate probe runs inside the click's own INSERT (a core.sql.SqlValue), so a click stays one
# statement on PostgreSQL; the ORM puts no subquery in an INSERT.
def _duplicate_sql() -> str:
    """The traffic column of a click's INSERT: DUPLICATE when the rule runs (first %s) and a counted click of the
    same visitor (second) on the same link (third) exists since the window's start (fourth); otherwise the
    traffic decided before (fifth). The probe uses the partial index click_counted_visitor_link."""
    table = ClickEvent._meta.db_table
    return (
        f'CASE WHEN %s AND EXISTS (SELECT 1 FROM "{table}" AS seen WHERE seen."visitor_hash" = %s '
        f'AND seen."link_id" = %s AND seen."traffic" = \'\' AND seen."click_timestamp" > %s) '
        f"THEN '{Traffic.DUPLICATE.value}' ELSE %s END"
    )


DUPLICATE_SQL = _duplicate_sql()


def duplicate_params(quality: ClickQuality, *, link_id: int) -> list[object]:
    """DUPLICATE_SQL's parameters, in order."""
    return [
        quality.duplicate_since is not None,
        quality.visitor_hash,
        link_id,
        quality.duplicate_since,
        quality.traffic,
    ]


# Not the ORM: each click is compared with the earlier ones within its program's window, read from a LEFT JOIN of
# the rule's setting (no relation leads from a click to it) with the default when there is none.
@cache
def racing_duplicates_sql() -> str:
    """Marks DUPLICATE the counted clicks with an id above the first %s, up to the second, that a counted click of
    the same visitor on the same link preceded within the window, where the rule runs (the setting's, else the
    third %s: the rule's default) and the window is the setting's minutes (else the fourth). PostgreSQL only."""
    click = ClickEvent._meta.db_table
    setting = RuleSetting._meta.db_table
    return f"""
        WITH raced AS (
            SELECT click.id FROM "{click}" AS click
            LEFT JOIN "{setting}" AS setting
                ON setting.program_id = click.program_id AND setting.rule = '{Rule.DUPLICATE_CLICK.value}'
            WHERE click.id > %s AND click.id <= %s AND click.traffic = '' AND NOT click.is_test
              AND click.visitor_hash <> '' AND COALESCE(setting.enabled, %s)
              AND EXISTS (
                  SELECT 1 FROM "{click}" AS seen
                  WHERE seen.visitor_hash = click.visitor_hash AND seen.link_id = click.link_id
                    AND seen.traffic = '' AND seen.id < click.id
                    AND seen.click_timestamp > click.click_timestamp
                        - make_interval(mins => COALESCE(setting.window_minutes, %s))
              )
        )
        UPDATE "{click}" SET traffic = '{Traffic.DUPLICATE.value}' WHERE id IN (SELECT id FROM raced)"""


# --- Sales -------------------------------------------------------------------------------------------------------


# Not the ORM: the conditions of customer_select_sql below (a sale's customer lookups). The click_id lookup, also the
# condition inside key_and_customer_sql's LATERAL join (click_id is unique).
CUSTOMER_BY_CLICK_ID = '"click_id" = %s AND "is_test" = %s'
# Not the ORM: as above, the customer_key lookup (the earliest customer with the key keeps the attribution).
CUSTOMER_BY_KEY = '"program_id" = %s AND "customer_key" = %s AND "is_test" = %s ORDER BY "id"'


# Not the ORM: a sale's two reads (its key with the program, and the customer its click_id names) in one round trip,
# which the ORM cannot join (a LATERAL join; PostgreSQL only: core.sql.capabilities().lateral_join).
@cache
def key_and_customer_sql() -> str:
    """The key whose digest is the third %s with its program (programs.sql.key_with_program_select's columns), then
    every column of the customer CUSTOMER_BY_CLICK_ID finds with the first two (NULLs when none)."""
    keys, programs, customers = ProgramKey._meta.db_table, Program._meta.db_table, Customer._meta.db_table
    return (
        f"SELECT {key_with_program_select()}, {select_columns_sql(Customer, 'c')} "
        f'FROM "{keys}" AS k JOIN "{programs}" AS p ON p."id" = k."program_id" '
        f'LEFT JOIN LATERAL (SELECT * FROM "{customers}" WHERE {CUSTOMER_BY_CLICK_ID} LIMIT 1) AS c ON true '
        'WHERE k."digest" = %s LIMIT 1'
    )


# Not the ORM: the ORM would compile the same SELECT again on every sale (about a sixth of a sale's time in Python);
# the row is read back without its raw-query machinery (core.sql.model_from_row).
@cache
def customer_select_sql(condition: str) -> str:
    """The first customer (every column) WHERE condition (CUSTOMER_BY_CLICK_ID or CUSTOMER_BY_KEY)."""
    return f'SELECT {select_columns_sql(Customer, "c")} FROM "{Customer._meta.db_table}" AS c WHERE {condition} LIMIT 1'


# Not the ORM: the sale's id is known only inside the statement that inserts it (core.sql.insert_family's
# {first_id}), so the commission's events get it there, by jsonb (settlement.sale_settled_at_once runs on PostgreSQL
# only).
DATA_WITH_SALE_ID = "(%s::jsonb || jsonb_build_object('sale_id', {first_id}))"


# --- Counters ----------------------------------------------------------------------------------------------------


# Not the ORM: among the busiest statements of the service and always the same, so written once here where the ORM
# would build its F() update again on every lead (standard SQL: SQLite and PostgreSQL).
@cache
def partner_program_add_sql(columns: tuple[str, ...]) -> str:
    """UPDATE ... SET column = column + %s for each of `columns`, in their order, of the partner's (%s) row in the
    program (%s): no read-modify-write race."""
    assignments = ", ".join(f'"{column}" = "{column}" + %s' for column in columns)
    return f'UPDATE {_table(PartnerProgram)} SET {assignments} WHERE "partner_id" = %s AND "program_id" = %s'


# Not the ORM: the ORM has no INSERT ... ON CONFLICT DO UPDATE that adds to the row it meets (PostgreSQL and SQLite
# 3.24+ alike); the rollups fold a batch of groups with one executemany.
@cache
def rollup_add_sql(group: tuple[str, ...], columns: tuple[str, ...]) -> str:
    """INSERT of a DailyRollup row of `group` and `columns` (one %s each, in that order) that, on a row of the same
    group already there, adds `columns` to it."""
    table = _table(DailyRollup)
    names = ", ".join(f'"{name}"' for name in (*group, *columns))
    marks = ", ".join(["%s"] * (len(group) + len(columns)))
    sums = ", ".join(f'"{c}" = {table}."{c}" + EXCLUDED."{c}"' for c in columns)
    conflict = ", ".join(f'"{name}"' for name in group)
    return f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT ({conflict}) DO UPDATE SET {sums}"


# Not the ORM: the link's last_clicked moves only forward, decided in the UPDATE itself (a CASE the ORM would build
# again for every batch), so two runs adding clicks never move it back.
@cache
def link_clicks_add_sql() -> str:
    """Adds %s clicks to the link whose id is the fourth %s, and moves its last_clicked to the third %s when it is
    empty or before the second."""
    return (
        f'UPDATE {_table(ReferralLink)} SET "clicks" = "clicks" + %s, "last_clicked" = CASE WHEN "last_clicked" '
        f'IS NULL OR "last_clicked" < %s THEN %s ELSE "last_clicked" END WHERE "id" = %s'
    )
