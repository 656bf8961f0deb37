import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("commissions", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="NotificationOutbox",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("refund_step", models.PositiveIntegerField()),
                ("was_paid_out", models.BooleanField()),
                ("reversed", models.BooleanField()),
                ("refund_reason", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ("delivered_at", models.DateTimeField(blank=True, null=True)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                (
                    "commission",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="commissions.commission",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "notification outbox",
                "indexes": [
                    models.Index(
                        condition=models.Q(("delivered_at__isnull", True)), fields=["id"], name="outbox_undelivered"
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("commission", "refund_step"), name="outbox_one_per_refund_step")
                ],
            },
        ),
    ]
