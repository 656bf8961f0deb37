"""The fraud rules' indexes: the duplicate probe, the flagged clicks list and the visitor_velocity count. Built
concurrently on PostgreSQL (as 0004's), so clicks go on being recorded while a large table is indexed."""

from importlib import import_module

from django.db import migrations, models

import core.expressions

AddIndexConcurrentlyOnPostgres = import_module(
    "tracking.migrations.0004_event_program_id_indexes"
).AddIndexConcurrentlyOnPostgres


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("tracking", "0007_fraud_rule_columns"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="clickevent",
            index=models.Index(
                condition=models.Q(("traffic", "")),
                fields=["visitor_hash", "link", "click_timestamp"],
                name="click_counted_visitor_link",
            ),
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="clickevent",
            index=models.Index(
                models.F("program"),
                core.expressions.Negated(models.F("id")),
                condition=models.Q(
                    models.Q(("traffic", ""), _negated=True), models.Q(("flags", []), _negated=True), _connector="OR"
                ),
                name="click_program_flagged",
            ),
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="customer",
            index=models.Index(
                condition=models.Q(("visitor_hash", ""), _negated=True),
                fields=["program", "visitor_hash", "first_clicked_at"],
                name="customer_program_visitor",
            ),
        ),
    ]
