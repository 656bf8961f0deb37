from django.urls import path

from .views import ProgramKeyRegenerateApi, ProgramSettingsApi

urlpatterns = [
    path(
        "api/programs/<str:program_id>/regenerate-key",
        ProgramKeyRegenerateApi.as_view(),
        name="program-key-regenerate",
    ),
    path("api/v1/programs/<str:program_id>/settings", ProgramSettingsApi.as_view(), name="program-settings"),
]
