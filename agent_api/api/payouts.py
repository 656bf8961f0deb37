"""Agent routes for payouts: partner balances from the ledger, withdrawals, mark paid."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
