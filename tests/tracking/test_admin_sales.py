"""The sale admin shows sales and changes none of them: every field feeds money, with or without a commission."""

import pytest
from django.contrib.auth import get_user_model

from tests.factories import CommissionFactory, SaleFactory
from tracking.models import SaleEvent

pytestmark = pytest.mark.django_db

SALES = "/admin/tracking/saleevent/"
MONEY_FIELDS = (
    "amount_cents",
    "currency",
    "tax_cents",
    "is_test",
    "customer",
    "partner",
    "program",
    "processor_event_id",
)


@pytest.fixture
def operator(client):
    client.force_login(get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123"))
    return client


@pytest.mark.parametrize("with_commission", [True, False], ids=["commissioned", "no-commission"])
def test_money_fields_cannot_be_edited(operator, with_commission):
    sale = SaleFactory(amount_cents=10000, tax_cents=500)
    if with_commission:
        CommissionFactory(sale=sale)
    url = f"{SALES}{sale.pk}/change/"
    page = operator.get(url)
    assert page.status_code == 200
    assert [field for field in MONEY_FIELDS if f'name="{field}"' in page.content.decode()] == []
    operator.post(url, {"amount_cents": 1, "tax_cents": 0, "currency": "EUR", "is_test": "on", "_save": "Save"})
    sale.refresh_from_db()
    assert (sale.amount_cents, sale.tax_cents, sale.currency, sale.is_test) == (10000, 500, "USD", False)


def test_sales_are_not_added_by_hand(operator):
    assert operator.get(f"{SALES}add/").status_code == 403
    assert not SaleEvent.objects.exists()
