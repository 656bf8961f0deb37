"""The Payouts page's routes (dashboard.payout_views), included by dashboard.urls."""

from django.urls import path

from . import payout_views

RUN = "programs/<int:program_id>/payouts/runs/<int:run_id>"

urlpatterns = [
    path("programs/<int:program_id>/payouts", payout_views.payouts_page, name="dashboard-payouts"),
    path(
        "programs/<int:program_id>/payouts/minimum",
        payout_views.payout_minimum_save,
        name="dashboard-payout-minimum",
    ),
    path(
        "programs/<int:program_id>/payouts/preview",
        payout_views.payout_run_preview,
        name="dashboard-payout-preview",
    ),
    path(
        "programs/<int:program_id>/payouts/payouts.csv",
        payout_views.payouts_export,
        name="dashboard-payouts-export",
    ),
    path(
        "programs/<int:program_id>/payouts/commissions.csv",
        payout_views.commissions_export,
        name="dashboard-payout-commissions-export",
    ),
    path(RUN, payout_views.payout_run_page, name="dashboard-payout-run"),
    path(f"{RUN}/confirm", payout_views.payout_run_confirm, name="dashboard-payout-run-confirm"),
    path(f"{RUN}/export/<str:rail>", payout_views.payout_run_export, name="dashboard-payout-run-export"),
    path(f"{RUN}/import", payout_views.payout_run_import, name="dashboard-payout-run-import"),
    path(
        f"{RUN}/payouts/<int:payout_id>/paid",
        payout_views.payout_mark_paid_view,
        name="dashboard-payout-mark-paid",
    ),
    path(
        f"{RUN}/payouts/<int:payout_id>/failed",
        payout_views.payout_mark_failed_view,
        name="dashboard-payout-mark-failed",
    ),
]
