"""{% load money %}: {{ amount_cents|money:currency }} shows minor units as core.money does ("9.80 USD")."""

from typing import Literal

from django import template

from core.money import money as money_text

register = template.Library()


@register.filter
def money(minor: int | Literal[""] | None, currency: str | None = None) -> str:
    """An empty value stays empty (a commission not created yet); anything else is shown in major units."""
    if minor is None or minor == "":
        return ""
    return money_text(int(minor), currency or None)
