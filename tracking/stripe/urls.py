from django.urls import path

from . import connect_views
from .webhook import stripe_webhook

urlpatterns = [
    path("webhooks/stripe", stripe_webhook, name="stripe-webhook"),
    path("programs/<int:program_id>/stripe", connect_views.stripe_connection, name="stripe-connection"),
    path("programs/<int:program_id>/stripe/connect", connect_views.stripe_connect_start, name="stripe-connect"),
    path("programs/<int:program_id>/stripe/disconnect", connect_views.stripe_disconnect_view, name="stripe-disconnect"),
    path("stripe/oauth/callback", connect_views.stripe_oauth_callback, name="stripe-oauth-callback"),
]
