"""Dashboard pages. Program pages live under /programs/<id>/ next to the Stripe connection page
(/programs/<id>/stripe, routed by programs.api.urls); none of these paths overlaps it or /api/."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.program_list, name="dashboard-home"),
    path("programs/<int:program_id>/", views.program_overview, name="dashboard-overview"),
    path("programs/<int:program_id>/events", views.program_events, name="dashboard-events"),
    path("programs/<int:program_id>/readiness", views.program_readiness, name="dashboard-readiness"),
    path("programs/<int:program_id>/key", views.program_key, name="dashboard-key"),
    path("programs/<int:program_id>/partners", views.program_partners, name="dashboard-partners"),
    path("programs/<int:program_id>/commissions", views.program_commissions, name="dashboard-commissions"),
    path("programs/<int:program_id>/logs", views.program_logs, name="dashboard-logs"),
    path("programs/<int:program_id>/explain", views.program_explain, name="dashboard-explain"),
]
