from django.urls import path

from .views import ProgramKeyRegenerateApi, ProgramSettingsApi

urlpatterns = [
    path(
        "api/programs/<id:program_id>/regenerate-key",
        ProgramKeyRegenerateApi.as_view(),
        name="program-key-regenerate",
    ),
    path("api/v1/programs/<id:program_id>/settings", ProgramSettingsApi.as_view(), name="program-settings"),
]
