"""The project's routes plus the Import page's, until config/urls.py includes imports.urls."""

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [path("", include("imports.urls")), *project_urlpatterns]
