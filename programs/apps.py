from django.apps import AppConfig


class ProgramsConfig(AppConfig):
    name = "programs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from programs.api import schema  # noqa: F401  (registers the program-key OpenAPI extension)
