from django.urls import path

from programs import stripe_views

from .views import ProgramKeyRegenerateApi

urlpatterns = [
    path(
        "api/programs/<str:program_id>/regenerate-key",
        ProgramKeyRegenerateApi.as_view(),
        name="program-key-regenerate",
    ),
    path("programs/<int:program_id>/stripe", stripe_views.stripe_connection, name="stripe-connection"),
    path("programs/<int:program_id>/stripe/connect", stripe_views.stripe_connect_start, name="stripe-connect"),
    path("programs/<int:program_id>/stripe/disconnect", stripe_views.stripe_disconnect_view, name="stripe-disconnect"),
    path("stripe/oauth/callback", stripe_views.stripe_oauth_callback, name="stripe-oauth-callback"),
]
