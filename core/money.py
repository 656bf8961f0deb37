"""Money as people read it: an amount recorded in minor units (amount_cents) shown in major units with the
currency's own decimals (core.currency), e.g. 980 USD -> "9.80 USD", 5000 VND -> "5,000 VND". Every page and every
explanation in words shows money through `money`; JSON keeps the integers. An amount a person types in major units
is read back by `minor_units_parse`."""

import re
from decimal import Decimal, InvalidOperation

from .currency import DEFAULT_EXPONENT, minor_unit_exponent

# ASCII digits with an optional fraction ("50", "50.5", ".5"): Decimal() alone also reads other scripts' digits
# ("١" is 1, "５０" is 50), exponents, signs, "NaN" and "Infinity".
_TYPED_AMOUNT = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def money(minor: int, currency: str | None = None) -> str:
    """`minor` units of `currency` in major units, thousands grouped, the code after: -123456 USD ->
    "-1,234.56 USD". Without a currency (sums over sales in any currency) two decimals and no code."""
    places = minor_unit_exponent(currency) if currency else DEFAULT_EXPONENT
    text = f"{Decimal(int(minor)).scaleb(-places):,.{places}f}"
    return f"{text} {currency}" if currency else text


def minor_units_parse(text: str, currency: str, *, below: Decimal) -> int | None:
    """An amount typed in major units ("50", "50.00", "5000" VND) in `currency`'s minor units; None when it is not
    one: anything but ASCII digits and one point, `below` or more, or more decimals than the currency has."""
    text = text.strip()
    if not _TYPED_AMOUNT.fullmatch(text):
        return None
    try:
        amount = Decimal(text)
    except InvalidOperation:  # the pattern above makes this unreachable; kept for safety
        return None
    if amount >= below:
        return None
    minor = amount.scaleb(minor_unit_exponent(currency))
    if minor != minor.to_integral_value():
        return None
    return int(minor)
