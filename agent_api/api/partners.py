"""Agent routes for partners: list, create, enroll in a program, update."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
