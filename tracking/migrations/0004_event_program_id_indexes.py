"""Indexes for the agent API's keyset pages (program, is_test, id DESC) on the three event tables. Built
concurrently, so recording events goes on while a large table is indexed."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("tracking", "0003_saleevent_no_commission_reason"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="clickevent",
            index=models.Index(fields=["program", "is_test", "-id"], name="click_program_id"),
        ),
        AddIndexConcurrently(
            model_name="leadevent",
            index=models.Index(fields=["program", "is_test", "-id"], name="lead_program_id"),
        ),
        AddIndexConcurrently(
            model_name="saleevent",
            index=models.Index(fields=["program", "is_test", "-id"], name="sale_program_id"),
        ),
    ]
