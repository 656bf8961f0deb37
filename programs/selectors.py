from decimal import Decimal
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from django.db.models import QuerySet

from core.sql import model_from_row

from .keys import digests_match, key_digest
from .models import Membership, Program, ProgramKey
from .sql import KEY_WITH_PROGRAM_COLUMNS, key_with_program_sql


def program_key_get_by_raw(raw_key: str) -> ProgramKey | None:
    """The key whose digest matches raw_key exactly (one indexed query, program joined). digest is unique: no
    ORDER BY is needed."""
    digest = key_digest(raw_key)
    with connection.cursor() as cursor:
        cursor.execute(key_with_program_sql(), [digest])
        row = cursor.fetchone()
    return None if row is None else program_key_from_row(row, digest=digest)


def program_key_from_row(row: "tuple[Any, ...]", *, digest: str) -> ProgramKey | None:
    """The key (its program attached) from a row of key_with_program_select's columns found by `digest`; None
    unless the stored digest matches it (compared in constant time)."""
    split = len(ProgramKey._meta.concrete_fields)
    key = cast(ProgramKey, model_from_row(ProgramKey, row[:split]))
    if not digests_match(key.digest, digest):
        return None
    key.program = cast(Program, model_from_row(Program, row[split:KEY_WITH_PROGRAM_COLUMNS]))
    return key


def live_keys() -> QuerySet[ProgramKey]:
    """Every program's live key: the one rule for "the live key", filtered, prefetched or joined by its users."""
    return ProgramKey.objects.live()


def program_live_key_get(*, program_id: int) -> ProgramKey | None:
    """The program's live key, or None. At most one exists (program_key_one_per_mode), so no ORDER BY."""
    return next(iter(live_keys().filter(program_id=program_id)[:1]), None)


def membership_get(*, user: User | AnonymousUser, program: Program) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, workspace_id=program.workspace_id, is_active=True).first()


def rate_number(value: Decimal) -> int | float:
    """A rate as a JSON number: whole rates without a fraction (20), others as decimals (12.5)."""
    return int(value) if value == value.to_integral_value() else float(value)


def program_settings_data(program: Program, *, live_key: ProgramKey | None) -> dict[str, Any]:
    """The settings fields shared by the status and settings routes (no cookie field: each route names it)."""
    return {
        "id": program.pk,
        "name": program.name,
        "domain": program.domain,
        "commission_type": program.commission_type,
        "commission_rate": rate_number(program.commission_rate),
        "duration_months": program.duration_months,
        "hold_days": program.hold_days,
        "lead_auth": program.lead_auth,
        "api_token_masked": live_key.masked if live_key else "",
    }
