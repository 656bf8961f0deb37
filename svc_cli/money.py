"""Money as the service's pages show it (core.money): minor units in major units with the currency's own decimals,
980 USD -> "9.80 USD", 5000 VND -> "5,000 VND". The CLI runs without Django, so the exponents are copied here from
core/currency.py; tests/cli_api/test_svc_money.py checks that the two tables agree."""

from decimal import Decimal
from typing import Any

DEFAULT_EXPONENT = 2
MINOR_UNIT_EXPONENTS: dict[str, int] = {
    "USD": 2,
    "EUR": 2,
    "VND": 0,
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VUV", "XAF", "XOF", "XPF"), 0
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
}


def money(minor: Any, currency: str | None = None) -> str:
    """`minor` units of `currency` in major units, thousands grouped, the code after: -123456 USD -> "-1,234.56 USD".
    Without a currency two decimals and no code. A value that is not an integer (an answer from another version of
    the service) is shown as it came."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        return f"{minor} {currency}" if currency else str(minor)
    places = MINOR_UNIT_EXPONENTS.get(currency.upper(), DEFAULT_EXPONENT) if currency else DEFAULT_EXPONENT
    text = f"{Decimal(minor).scaleb(-places):,.{places}f}"
    return f"{text} {currency}" if currency else text
