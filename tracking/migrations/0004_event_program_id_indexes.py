"""Indexes for the agent API's keyset pages (program, is_test, id DESC) on the three event tables. Built
concurrently on PostgreSQL, so recording events goes on while a large table is indexed; other databases (the
SQLite of `make run`) build them the ordinary way."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class AddIndexConcurrentlyOnPostgres(AddIndexConcurrently):
    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            migrations.AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            migrations.AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("tracking", "0003_saleevent_no_commission_reason"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="clickevent",
            index=models.Index(fields=["program", "is_test", "-id"], name="click_program_id"),
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="leadevent",
            index=models.Index(fields=["program", "is_test", "-id"], name="lead_program_id"),
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="saleevent",
            index=models.Index(fields=["program", "is_test", "-id"], name="sale_program_id"),
        ),
    ]
