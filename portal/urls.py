from django.urls import path

from . import commissions, links, performance, views

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
]
