from django.apps import AppConfig


class CliApiConfig(AppConfig):
    name = "cli_api"
    default_auto_field = "django.db.models.BigAutoField"
