"""The index a processor refund of an imported sale is found by: the program and the processor's payment id the
import kept (provider_payment_id). Built concurrently on PostgreSQL (as 0004's), so sales go on being recorded while
a large table is indexed."""

from importlib import import_module

from django.db import migrations, models

AddIndexConcurrentlyOnPostgres = import_module(
    "tracking.migrations.0004_event_program_id_indexes"
).AddIndexConcurrentlyOnPostgres


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("tracking", "0009_rollupstate_counters_from_sale_id"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="saleevent",
            index=models.Index(fields=["program", "provider_payment_id"], name="sale_program_payment_id"),
        ),
    ]
