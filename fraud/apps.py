from django.apps import AppConfig


class FraudConfig(AppConfig):
    name = "fraud"
    verbose_name = "Fraud rules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from .config import program_rules_clear
        from .models import RuleSetting

        post_save.connect(program_rules_clear, sender=RuleSetting, dispatch_uid="fraud-rules-save")
        post_delete.connect(program_rules_clear, sender=RuleSetting, dispatch_uid="fraud-rules-delete")
