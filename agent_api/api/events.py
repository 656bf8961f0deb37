"""Agent routes for events: clicks, leads and sales, filtered, with cursor pagination."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
