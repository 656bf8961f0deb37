from django.db import migrations, models


def sales_counted_so_far(apps, schema_editor):
    """The sales already recorded were counted on the partner-program counters by the sale path itself, so the
    rollup run adds to those counters only the sales after them."""
    sale_event = apps.get_model("tracking", "SaleEvent")
    last = sale_event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    apps.get_model("tracking", "RollupState").objects.update_or_create(pk=1, defaults={"counters_from_sale_id": last})


class Migration(migrations.Migration):
    dependencies = [
        ("tracking", "0008_fraud_rule_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="rollupstate",
            name="counters_from_sale_id",
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(sales_counted_so_far, migrations.RunPython.noop),
    ]
