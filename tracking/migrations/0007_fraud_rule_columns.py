"""The fraud rules' columns: how a click counts (traffic), the flags it raised, and the visitor hash on clicks
and customers. Constant defaults: PostgreSQL adds each column without rewriting the table."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("programs", "0008_retired_program_key"),
        ("tracking", "0006_rollups"),
    ]

    operations = [
        migrations.AddField(
            model_name="clickevent",
            name="flags",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="clickevent",
            name="traffic",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
        migrations.AddField(
            model_name="clickevent",
            name="visitor_hash",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.AddField(
            model_name="customer",
            name="click_flags",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="customer",
            name="visitor_hash",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
    ]
