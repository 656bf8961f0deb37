"""core.sql writes what save() writes: its INSERT text and values match Django's insert compiler for the models the
hot paths insert with it, and insert_pair stores both rows and sets their ids as save() would."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models.sql import InsertQuery

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core.sql import insert_pair, insert_params, insert_sql, inserted_fields
from tests.factories import CustomerFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent, Customer

pytestmark = pytest.mark.django_db


def compiled_by_django(obj) -> tuple[str, list]:
    query = InsertQuery(type(obj))
    query.insert_values(inserted_fields(type(obj)), [obj])
    [(sql, params)] = query.get_compiler(connection=connection).as_sql()
    return sql, list(params)


def instances(frozen):
    link = ReferralLinkFactory()
    customer = CustomerFactory(link=link)
    sale = SaleFactory(customer=customer)
    commission = Commission(
        program_id=link.program_id,
        partner_id=link.partner_id,
        sale=sale,
        customer=customer,
        amount_cents=490,
        status=CommissionStatus.APPROVED,
        credited=True,
        approved_at=frozen,
        hold_until=frozen + timedelta(days=3),
    )
    return [
        Customer(program_id=link.program_id, click_id="cust_1", first_partner_id=link.partner_id, first_link=link),
        ClickEvent(program_id=link.program_id, partner_id=link.partner_id, link=link, customer=customer, click_id="c"),
        commission,
        LedgerEntry(partner_id=link.partner_id, commission_id=None, kind="credit", amount_cents=490, memo="m"),
    ]


def comparable(params: list) -> list:
    # psycopg's JSON wrapper (Jsonb) has no equality of its own: compare what it wraps.
    return [getattr(param, "obj", param) for param in params]


def test_insert_sql_and_params_are_what_django_compiles(frozen):
    for obj in instances(frozen):
        sql, params = compiled_by_django(obj)
        assert insert_sql(type(obj)) == sql, type(obj).__name__
        assert comparable(insert_params(obj)) == comparable(params), type(obj).__name__


@pytest.mark.postgres
def test_insert_pair_stores_both_rows_with_their_link(frozen):
    link = ReferralLinkFactory()
    customer = Customer(program_id=link.program_id, click_id="cust_pair", first_partner_id=link.partner_id)
    event = ClickEvent(program_id=link.program_id, partner_id=link.partner_id, link=link, click_id="cust_pair")
    insert_pair(customer, event, refers={"customer_id": "{first_id}", "page_title": "'for ' || {first_id}"})
    assert Customer.objects.get().pk == customer.pk and not customer._state.adding
    stored = ClickEvent.objects.get()
    assert (stored.pk, stored.customer_id, event.customer_id) == (event.pk, customer.pk, customer.pk)
    assert stored.page_title == event.page_title == f"for {customer.pk}"
