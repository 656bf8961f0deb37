from django.urls import path

from .views import ProgramKeyRegenerateApi

urlpatterns = [
    path(
        "api/programs/<str:program_id>/regenerate-key",
        ProgramKeyRegenerateApi.as_view(),
        name="program-key-regenerate",
    ),
]
