from django.db import migrations


class Migration(migrations.Migration):
    """Admin's index read "Ledger entrys": the plural is spelt out."""

    dependencies = [("commissions", "0006_fraud_holds_and_reviews")]

    operations = [
        migrations.AlterModelOptions(name="ledgerentry", options={"verbose_name_plural": "ledger entries"}),
    ]
