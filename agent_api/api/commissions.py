"""Agent routes for commissions: list, get with refund history, approve early, void, hold and release."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
