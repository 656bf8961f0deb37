from django.urls import path

from . import account, applications, commissions, links, payouts, performance, views

urlpatterns = [
    path("portal/", views.home, name="portal-home"),
    path("portal/sign-in", views.sign_in, name="portal-sign-in"),
    path("portal/sign-out", views.sign_out, name="portal-sign-out"),
    path("portal/sign-out-everywhere", views.sign_out_everywhere, name="portal-sign-out-everywhere"),
    path("portal/invitations/<str:token>", views.invitation, name="portal-invitation"),
    path("portal/links", links.links, name="portal-links"),
    path("portal/performance", performance.performance, name="portal-performance"),
    path("portal/commissions", commissions.commissions_page, name="portal-commissions"),
    path("portal/balance", commissions.balance_page, name="portal-balance"),
    path("portal/payouts", payouts.payouts_page, name="portal-payouts"),
    path("portal/payouts/stripe", payouts.stripe_start, name="portal-payouts-stripe"),
    path("portal/payouts/stripe/return", payouts.stripe_return, name="portal-payouts-stripe-return"),
    path("portal/payouts/stripe/refresh", payouts.stripe_refresh, name="portal-payouts-stripe-refresh"),
    path("portal/payouts/manual", payouts.manual_rail, name="portal-payouts-manual"),
    path("join/<int:program_id>", applications.join, name="portal-join"),
    path("join/<int:program_id>/<slug:group_slug>", applications.join_group, name="portal-join-group"),
    path("portal/account", account.account_page, name="portal-account"),
    path("portal/account/password", account.password_change, name="portal-password-change"),
    path("portal/account/emails", account.email_preferences, name="portal-email-preferences"),
    path("portal/password-reset", account.password_reset, name="portal-password-reset"),
    path("portal/password-reset/<str:token>", account.password_reset_confirm, name="portal-password-reset-confirm"),
    path("portal/unsubscribe/<str:token>", account.unsubscribe, name="portal-unsubscribe"),
]
