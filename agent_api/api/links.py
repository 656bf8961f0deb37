"""Agent routes for referral links: list, create, deactivate."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
