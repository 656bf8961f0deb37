"""Dashboard pages. Program pages live under /programs/<id>/ next to the Stripe connection page
(/programs/<id>/stripe, routed by programs.api.urls); none of these paths overlaps it or /api/."""

from django.urls import include, path

from . import application_views, link_alias_views, partner_views, review_views, views, webhook_views

urlpatterns = [
    path("", views.program_list, name="dashboard-home"),
    # A program's payouts: /programs/<id>/payouts and below (docs/payouts.md).
    path("", include("dashboard.payout_urls")),
    # Moving in from another platform: /programs/<id>/import and below (docs/import.md).
    path("", include("dashboard.import_urls")),
    # Partner groups, tier rules, bonuses, and each partner's group and coupon codes: /programs/<id>/groups and below.
    path("", include("dashboard.group_urls")),
    path("programs/<int:program_id>/", views.program_overview, name="dashboard-overview"),
    path(
        "programs/<int:program_id>/link-aliases",
        link_alias_views.link_aliases_settings,
        name="dashboard-link-aliases",
    ),
    path("programs/<int:program_id>/events", views.program_events, name="dashboard-events"),
    path("programs/<int:program_id>/readiness", views.program_readiness, name="dashboard-readiness"),
    path("programs/<int:program_id>/key", views.program_key, name="dashboard-key"),
    path("programs/<int:program_id>/partners", views.program_partners, name="dashboard-partners"),
    path("programs/<int:program_id>/partners/invite", partner_views.partner_invite, name="dashboard-partner-invite"),
    path(
        "programs/<int:program_id>/applications/<int:application_id>/approve",
        application_views.application_approve_view,
        name="dashboard-application-approve",
    ),
    path(
        "programs/<int:program_id>/applications/<int:application_id>/reject",
        application_views.application_reject_view,
        name="dashboard-application-reject",
    ),
    path(
        "programs/<int:program_id>/applications/settings",
        application_views.application_settings,
        name="dashboard-application-settings",
    ),
    path(
        "programs/<int:program_id>/partners/<int:partner_id>/deactivate",
        partner_views.partner_deactivate_view,
        name="dashboard-partner-deactivate",
    ),
    path(
        "programs/<int:program_id>/partners/<int:partner_id>/reactivate",
        partner_views.partner_reactivate_view,
        name="dashboard-partner-reactivate",
    ),
    path(
        "programs/<int:program_id>/partners/<int:partner_id>/links",
        partner_views.partner_link_create_view,
        name="dashboard-partner-link-create",
    ),
    path(
        "programs/<int:program_id>/partners/<int:partner_id>/notes",
        partner_views.partner_notes_view,
        name="dashboard-partner-notes",
    ),
    path(
        "programs/<int:program_id>/links/<int:link_id>/deactivate",
        partner_views.link_deactivate_view,
        name="dashboard-link-deactivate",
    ),
    path(
        "programs/<int:program_id>/links/<int:link_id>/activate",
        partner_views.link_activate_view,
        name="dashboard-link-activate",
    ),
    path("programs/<int:program_id>/commissions", views.program_commissions, name="dashboard-commissions"),
    path("programs/<int:program_id>/logs", views.program_logs, name="dashboard-logs"),
    path("programs/<int:program_id>/explain", views.program_explain, name="dashboard-explain"),
    path("programs/<int:program_id>/review", review_views.program_review, name="dashboard-review"),
    path("programs/<int:program_id>/review/rules", review_views.review_rules, name="dashboard-review-rules"),
    path(
        "programs/<int:program_id>/review/rules/reset",
        review_views.review_rule_reset,
        name="dashboard-review-rule-reset",
    ),
    path(
        "programs/<int:program_id>/review/commissions/<int:commission_id>/release",
        review_views.review_release,
        name="dashboard-review-release",
    ),
    path(
        "programs/<int:program_id>/review/commissions/<int:commission_id>/void",
        review_views.review_void,
        name="dashboard-review-void",
    ),
    path("programs/<int:program_id>/webhooks", webhook_views.webhooks_list, name="dashboard-webhooks"),
    path("programs/<int:program_id>/webhooks/new", webhook_views.webhook_create, name="dashboard-webhook-create"),
    path(
        "programs/<int:program_id>/webhooks/<int:endpoint_id>", webhook_views.webhook_detail, name="dashboard-webhook"
    ),
    path(
        "programs/<int:program_id>/webhooks/<int:endpoint_id>/edit",
        webhook_views.webhook_edit,
        name="dashboard-webhook-edit",
    ),
    path(
        "programs/<int:program_id>/webhooks/<int:endpoint_id>/rotate",
        webhook_views.webhook_rotate,
        name="dashboard-webhook-rotate",
    ),
    path(
        "programs/<int:program_id>/webhooks/<int:endpoint_id>/delete",
        webhook_views.webhook_delete,
        name="dashboard-webhook-delete",
    ),
    path(
        "programs/<int:program_id>/webhooks/<int:endpoint_id>/resend-failed",
        webhook_views.webhook_resend_failed,
        name="dashboard-webhook-resend-failed",
    ),
    path(
        "programs/<int:program_id>/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/resend",
        webhook_views.webhook_delivery_resend,
        name="dashboard-webhook-delivery-resend",
    ),
]
