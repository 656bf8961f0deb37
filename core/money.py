"""Money as people read it: an amount recorded in minor units (amount_cents) shown in major units with the
currency's own decimals (core.currency), e.g. 980 USD -> "9.80 USD", 5000 VND -> "5,000 VND". Every page and every
explanation in words shows money through `money`; JSON keeps the integers."""

from decimal import Decimal

from .currency import DEFAULT_EXPONENT, minor_unit_exponent


def money(minor: int, currency: str | None = None) -> str:
    """`minor` units of `currency` in major units, thousands grouped, the code after: -123456 USD ->
    "-1,234.56 USD". Without a currency (sums over sales in any currency) two decimals and no code."""
    places = minor_unit_exponent(currency) if currency else DEFAULT_EXPONENT
    text = f"{Decimal(int(minor)).scaleb(-places):,.{places}f}"
    return f"{text} {currency}" if currency else text
