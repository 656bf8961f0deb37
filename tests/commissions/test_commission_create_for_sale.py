"""commission_create_for_sale, the one entry point that settles an attributed live sale (used by the sale
endpoint, Stripe events and the reconciler): it decides, creates or records why not, and runs once."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from commissions.calculations import NoCommission
from commissions.models import Commission, LedgerEntry
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tracking.models import Customer
from tracking.services.settlement import commission_create_for_sale

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 1, 10, 12, tzinfo=UTC)


def settle(sale, now=None):
    return commission_create_for_sale(
        sale=sale, customer=sale.customer, program=sale.program, now=now or sale.sale_date
    )


@pytest.fixture
def customer():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)
    return CustomerFactory(link=ReferralLinkFactory(program=program))


def test_it_creates_credits_and_converts(customer):
    settled = settle(SaleFactory(customer=customer, sale_date=T0))
    assert settled.created and settled.no_commission is None
    assert (settled.commission.amount_cents, settled.commission.status) == (2000, "approved")
    assert LedgerEntry.objects.get().amount_cents == 2000
    customer = Customer.objects.get(pk=customer.pk)
    assert (customer.customer_status, customer.first_sale_at) == ("converted", T0)


def test_a_second_run_returns_the_commission_without_paying_twice(customer):
    sale = SaleFactory(customer=customer, sale_date=T0)
    first = settle(sale)
    again = settle(sale)
    assert (again.commission.pk, again.created) == (first.commission.pk, False)
    assert Commission.objects.count() == 1 and LedgerEntry.objects.count() == 1


def test_a_refusal_is_stored_on_the_sale_and_returned_again(customer):
    sale = SaleFactory(customer=customer, sale_date=T0, is_recurring=True)
    assert settle(sale).no_commission == NoCommission.RENEWAL_NOT_RECURRING
    sale.refresh_from_db()
    assert sale.no_commission_reason == "renewal_not_recurring"
    assert settle(sale).no_commission == NoCommission.RENEWAL_NOT_RECURRING
    assert not Commission.objects.exists()


def test_it_decides_at_the_sales_own_time_not_when_it_runs(customer):
    """A late run (the reconciler) settles a sale as the sale endpoint would have at the time of the sale."""
    program = customer.program
    program.commission_type, program.duration_months = "recurring_fixed", 1
    program.save()
    settle(SaleFactory(customer=customer, sale_date=T0))
    within = SaleFactory(customer=customer, sale_date=T0 + timedelta(days=20), is_recurring=True)
    settled = settle(within, now=T0 + timedelta(days=90))
    assert settled.commission is not None
    assert settled.commission.created_at == T0 + timedelta(days=90)


def test_an_earlier_sale_settled_late_becomes_the_customers_first_sale(customer):
    settle(SaleFactory(customer=customer, sale_date=T0 + timedelta(days=5)))
    settle(SaleFactory(customer=customer, sale_date=T0), now=T0 + timedelta(days=6))
    assert Customer.objects.get(pk=customer.pk).first_sale_at == T0
    assert Commission.objects.count() == 2
