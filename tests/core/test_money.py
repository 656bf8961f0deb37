"""core.money: an amount in minor units shown in major units with the currency's own exponent (core.currency),
as every page and explanation shows money; and the dashboard's `money` template filter, which is the same."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.template import Context, Template

from core.currency import Currency, minor_unit_exponent
from core.money import money


@pytest.mark.parametrize(
    ("minor", "currency", "shown"),
    [
        (980, "USD", "9.80 USD"),
        (5, "EUR", "0.05 EUR"),
        (0, "USD", "0.00 USD"),
        (5000, "VND", "5,000 VND"),
        (980, "JPY", "980 JPY"),
        (1234, "KWD", "1.234 KWD"),
        (-980, "USD", "-9.80 USD"),
        (-1500000, "VND", "-1,500,000 VND"),
        (123456789012345678, "USD", "1,234,567,890,123,456.78 USD"),
        (999999999999999999, "VND", "999,999,999,999,999,999 VND"),
        (980, "usd", "9.80 usd"),
        (980, "XYZ", "9.80 XYZ"),  # a code not listed has the usual 2 decimals
        (12345, None, "123.45"),  # a sum over currencies: two decimals, no code
    ],
)
def test_money(minor, currency, shown):
    assert money(minor, currency) == shown


def test_every_recorded_currency_has_its_exponent():
    assert {code: minor_unit_exponent(code) for code in Currency.values} == {"USD": 2, "EUR": 2, "VND": 0}


def test_the_template_filter_is_the_same_function():
    template = Template("{% load money %}{{ a|money:'VND' }} / {{ b|money:c }} / [{{ none|money:c }}] / {{ b|money }}")
    text = template.render(Context({"a": 1500000, "b": -980, "c": "USD", "none": None}))
    assert text == "1,500,000 VND / -9.80 USD / [] / -9.80"


def test_the_dashboards_javascript_shows_the_recorded_currencies_alike():
    # formatAmount (static/js/dashboard.js) knows two decimals and the currencies without a minor unit.
    source = (Path(settings.BASE_DIR) / "static" / "js" / "dashboard.js").read_text()
    listed = re.search(r"ZERO_DECIMAL = new Set\(\[(.*?)\]\)", source)
    assert listed is not None
    exponents = {code: minor_unit_exponent(code) for code in Currency.values}
    assert set(re.findall(r'"([A-Z]{3})"', listed.group(1))) == {
        code for code, places in exponents.items() if not places
    }
    assert set(exponents.values()) <= {0, 2}
