from django.apps import AppConfig


class CliApiConfig(AppConfig):
    name = "cli_api"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Command line (svc)"

    def ready(self) -> None:
        from cli_api import schema  # noqa: F401  (registers the OpenAPI login-token scheme)
