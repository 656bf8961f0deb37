from django.urls import path

from .webhook import payouts_stripe_webhook

urlpatterns = [
    path("api/payouts/stripe/webhook", payouts_stripe_webhook, name="payouts-stripe-webhook"),
]
