"""The currencies money is recorded in: sales (tracking), commissions, ledger entries and withdrawals, and how many
decimals each one's minor unit has (core.money shows amounts with them)."""

from django.db import models


class Currency(models.TextChoices):
    USD = "USD"
    EUR = "EUR"
    VND = "VND"


# ISO 4217 minor-unit exponents that differ from the usual 2 (an amount of 980 is 9.80 USD, 980 JPY, 0.980 KWD).
# Every currency the service records is listed with its own exponent; codes not listed have 2.
# svc_cli/money.py keeps its own copy (the CLI runs without Django); a test checks they agree.
DEFAULT_EXPONENT = 2
MINOR_UNIT_EXPONENTS: dict[str, int] = {
    Currency.USD: 2,
    Currency.EUR: 2,
    Currency.VND: 0,
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VUV", "XAF", "XOF", "XPF"), 0
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
}


def minor_unit_exponent(currency: str) -> int:
    """How many decimals the currency's minor unit has: 2 for USD and EUR, 0 for VND and JPY, 3 for KWD."""
    return MINOR_UNIT_EXPONENTS.get(currency.upper(), DEFAULT_EXPONENT)
