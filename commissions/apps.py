from django.apps import AppConfig


class CommissionsConfig(AppConfig):
    name = "commissions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.integrity import integrity_check_register

        from .integrity import CHECKS

        integrity_check_register(*CHECKS)
