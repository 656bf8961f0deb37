"""The currencies money is recorded in: sales (tracking), commissions, ledger entries and withdrawals."""

from django.db import models


class Currency(models.TextChoices):
    USD = "USD"
    EUR = "EUR"
    VND = "VND"
