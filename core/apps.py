from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"

    def ready(self) -> None:
        from django.urls import register_converter

        from core.api import schema  # noqa: F401  (registers the OpenAPI extensions)
        from core.ids import PathIdConverter

        register_converter(PathIdConverter, "id")
