from django.urls import path

from .webhook import stripe_webhook

urlpatterns = [
    path("webhooks/stripe", stripe_webhook, name="stripe-webhook"),
]
