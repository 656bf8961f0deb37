from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing platforms"
    default_auto_field = "django.db.models.BigAutoField"
