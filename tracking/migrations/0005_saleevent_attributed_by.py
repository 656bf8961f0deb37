from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tracking", "0004_event_program_id_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="saleevent",
            name="attributed_by",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
    ]
