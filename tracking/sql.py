"""tracking's hand-written SQL (tests/core/test_sql_homes.py): statements of the click path and of the running
counters, each built once per process from the models' names. Each says, in the comment above it, why it is not the
ORM; the callers run them (tracking.link_cache, tracking.quality, tracking.counters) or put them in an INSERT of
core.sql's."""

from functools import cache

from django.db import connection
from django.db.models import Model

from fraud.click import ClickQuality
from fraud.models import RuleSetting
from fraud.rules import Rule, Traffic
from programs.models import PartnerProgram, Program, ReferralLink

from .models import ClickEvent


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


# --- Counters ----------------------------------------------------------------------------------------------------


# Not the ORM: among the busiest statements of the service and always the same, so written once here where the ORM
# would build its F() update again on every lead (standard SQL: SQLite and PostgreSQL).
@cache
def partner_program_add_sql(columns: tuple[str, ...]) -> str:
    """UPDATE ... SET column = column + %s for each of `columns`, in their order, of the partner's (%s) row in the
    program (%s): no read-modify-write race."""
    assignments = ", ".join(f'"{column}" = "{column}" + %s' for column in columns)
    return f'UPDATE {_table(PartnerProgram)} SET {assignments} WHERE "partner_id" = %s AND "program_id" = %s'
