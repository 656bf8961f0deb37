from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from core.docs_pages import ReadinessDocsView
from core.views import ErrorReferenceView, TrivialApi, healthz
from dashboard.password_reset import OwnerPasswordResetView
from dashboard.sign_in import AdminSignInForm, SignInView
from tracking.bench_views import bare_click, bare_lead, bare_sale

# The admin's sign-in counts failures per username and locks as the dashboard's does (core.sign_in_lock).
admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # A signed-in user who opens the sign-in page goes straight to the dashboard.
    path("accounts/login/", SignInView.as_view(redirect_authenticated_user=True), name="login"),
    # The reset email goes out after the answer, so its time tells no one which addresses have an account.
    path("accounts/password_reset/", OwnerPasswordResetView.as_view(), name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("docs/errors", ErrorReferenceView.as_view(), name="docs-errors"),
    path("docs/readiness", ReadinessDocsView.as_view(), name="docs-readiness"),
    path("api/schema/", SpectacularAPIView.as_view(), name="openapi-schema"),
    path("", include("programs.api.urls")),
    path("", include("tracking.api.urls")),
    path("", include("insight.urls")),
    path("", include("tracking.stripe.urls")),
    path("", include("billing.urls")),
    path("", include("payouts.urls")),
    path("", include("dashboard.api.urls")),
    path("", include("cli_api.api.urls")),
    path("", include("agent_api.api.urls")),
    path("", include("portal.urls")),
    path("", include("dashboard.urls")),
]

if settings.BENCH_TRIVIAL_ENDPOINT:
    urlpatterns += [
        path("bench/trivial", TrivialApi.as_view()),
        path("bench/bare-click", bare_click),
        path("bench/bare-sale", bare_sale),
        path("bench/bare-lead", bare_lead),
    ]
