from django.urls import path

from .api import ProgramReadinessGetApi

urlpatterns = [
    path("api/v1/programs/me/readiness", ProgramReadinessGetApi.as_view(), name="program-readiness"),
]
