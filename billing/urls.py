from django.urls import path

from .views import billing_webhook

urlpatterns = [
    path("webhooks/billing/<str:platform>/<str:token>", billing_webhook, name="billing-webhook"),
]
