"""The site's URLconf with the Payouts page's routes, for tests that run before dashboard.urls includes them."""

from django.urls import include, path

from config.urls import urlpatterns as site_urlpatterns

urlpatterns = [path("", include("dashboard.payout_urls")), *site_urlpatterns]
