from django.db import migrations


def default_groups_make(apps, schema_editor):
    """Every program older than groups gets its default group; its enrolments stay NULL (the default group)."""
    Program = apps.get_model("programs", "Program")
    PartnerGroup = apps.get_model("groups", "PartnerGroup")
    have = set(PartnerGroup.objects.filter(is_default=True).values_list("program_id", flat=True))
    PartnerGroup.objects.bulk_create(
        [
            PartnerGroup(program_id=pk, name="Default", slug="default", is_default=True)
            for pk in Program.objects.values_list("pk", flat=True)
            if pk not in have
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):
    dependencies = [("groups", "0001_initial"), ("programs", "0015_partnerprogram_group")]

    operations = [migrations.RunPython(default_groups_make, migrations.RunPython.noop)]
