"""Rows of the request log written before every kept value was redacted: their excerpt, message, request id and
route pass through the same rule as a row written now (programs.calllog.excerpt_redacted, core.redaction.redact).

In batches of BATCH rows by id, each batch committed on its own (the migration is not atomic), so a large log is
never one long transaction; rows already clean are not written. A rerun finds nothing left to change. There is no
way back: what was masked is gone."""

from typing import Any

from django.db import migrations, transaction

from core.redaction import redact
from programs.calllog import excerpt_redacted

BATCH = 1000
COLUMNS = ("route", "message", "request_id", "excerpt")


def _clean(row: Any) -> bool:
    """Redacts the row in place; True when anything changed."""
    cleaned = {
        "route": redact(row.route)[:64],
        "message": redact(row.message)[:300],
        "request_id": redact(row.request_id)[:64],
        "excerpt": excerpt_redacted(row.excerpt) if isinstance(row.excerpt, dict) else redact(row.excerpt),
    }
    changed = any(getattr(row, column) != value for column, value in cleaned.items())
    for column, value in cleaned.items():
        setattr(row, column, value)
    return changed


def api_call_rows_redact(apps: Any, schema_editor: Any) -> int:
    """Returns how many rows changed."""
    ApiCall = apps.get_model("programs", "ApiCall")
    calls = ApiCall.objects.using(schema_editor.connection.alias)
    changed_total = 0
    last_id = 0
    while True:
        batch = list(calls.filter(pk__gt=last_id).order_by("pk").only("pk", *COLUMNS)[:BATCH])
        if not batch:
            return changed_total
        last_id = batch[-1].pk
        changed = [row for row in batch if _clean(row)]
        if changed:
            with transaction.atomic(using=schema_editor.connection.alias):
                calls.bulk_update(changed, COLUMNS)
            changed_total += len(changed)


def api_call_log_redact(apps: Any, schema_editor: Any) -> None:
    api_call_rows_redact(apps, schema_editor)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("programs", "0008_retired_program_key"),
    ]

    operations = [
        migrations.RunPython(api_call_log_redact, migrations.RunPython.noop, elidable=True),
    ]
