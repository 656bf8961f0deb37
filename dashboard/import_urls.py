"""The Import page's routes (dashboard.import_views)."""

from django.urls import path

from . import import_views as views

urlpatterns = [
    path("programs/<int:program_id>/import", views.import_page, name="imports-page"),
    path("programs/<int:program_id>/import/uploads/<int:upload_id>", views.upload_page, name="imports-upload"),
    path(
        "programs/<int:program_id>/import/uploads/<int:upload_id>/confirm",
        views.upload_confirm,
        name="imports-upload-confirm",
    ),
    path("programs/<int:program_id>/import/runs/<int:run_id>", views.run_page, name="imports-run"),
]
