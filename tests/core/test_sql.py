"""core.sql writes what save() writes: its INSERT text and values match Django's insert compiler for the models the
hot paths insert with it, and insert_pair and insert_family store every row and set their ids as save() would."""

from datetime import timedelta
from typing import Any

import pytest
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models.sql import InsertQuery
from django.test.utils import CaptureQueriesContext

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core.sql import UNFLUSHED, insert_family, insert_pair, insert_params, insert_sql, inserted_fields, rows_copy
from programs.calllog import ROW_COLUMNS as API_CALL_COLUMNS
from programs.models import ApiCall
from tests.factories import CustomerFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent, Customer, SaleEvent
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


def compiled_by_django(obj) -> tuple[str, list[Any]]:
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
        SaleEvent(program_id=link.program_id, customer=customer, processor_event_id="txn_compiled", amount_cents=1),
        # A JSON column (the event's data) goes through the field's get_db_prep_save as Django's compiler does.
        WebhookEvent(public_id="evt_1", program_id=link.program_id, type="sale.created", livemode=True, data={"a": 1}),
    ]


def comparable(params: list[Any]) -> list[Any]:
    # psycopg's JSON wrapper (Jsonb) has no equality of its own: compare what it wraps.
    return [getattr(param, "obj", param) for param in params]


def test_values_of_other_types_are_prepared_by_their_field_as_django_does(frozen):
    """A value not of its column's plain type (a number as text, 1 for a boolean, a str subclass, a key given as
    text) takes the field's own chain, as Django's compiler does."""
    link = ReferralLinkFactory()
    customer = CustomerFactory(link=link)

    class Code(str):
        pass

    sale = SaleEvent(
        program_id=str(link.program_id),
        customer=customer,
        processor_event_id=Code("txn_odd"),
        amount_cents="7",
        is_test=1,
    )
    sql, params = compiled_by_django(sale)
    assert comparable(insert_params(sale)) == comparable(params)
    assert [type(param) for param in insert_params(sale)] == [type(param) for param in params]


def test_insert_sql_and_params_are_what_django_compiles(frozen):
    for obj in instances(frozen):
        sql, params = compiled_by_django(obj)
        assert insert_sql(type(obj)) == sql, type(obj).__name__
        assert comparable(insert_params(obj)) == comparable(params), type(obj).__name__
        # The same types too: psycopg binds Int2, Int4 and Int8 (the backend's integer adapter) as their own types.
        assert [type(param) for param in insert_params(obj)] == [type(param) for param in params], type(obj).__name__


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


def family(link, customer, frozen):
    """A commission with its ledger credit and two events about it, none saved."""
    commission = Commission(
        program_id=link.program_id,
        partner_id=link.partner_id,
        sale=SaleFactory(customer=customer),
        customer=customer,
        amount_cents=490,
        status=CommissionStatus.APPROVED,
        credited=True,
        approved_at=frozen,
        hold_until=frozen,
    )
    credit = LedgerEntry(partner_id=link.partner_id, program_id=link.program_id, kind="credit", amount_cents=490)
    events = [
        WebhookEvent(public_id=f"evt_{kind}", program_id=link.program_id, type=kind, livemode=True, data={"n": n})
        for n, kind in enumerate(("commission.created", "commission.approved"))
    ]
    dependents = [
        (credit, {"commission_id": "{first_id}", "memo": "'Commission #' || {first_id} || ' 100%%'"}),
        *((event, {"object_id": "{first_id}"}) for event in events),
    ]
    return commission, credit, events, dependents


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_insert_family_stores_every_dependent_in_one_unflushed_statement(frozen):
    link = ReferralLinkFactory()
    customer = CustomerFactory(link=link)
    commission, credit, events, dependents = family(link, customer, frozen)
    with CaptureQueriesContext(connection) as captured:
        insert_family(commission, dependents, unflushed=True)
    # One round trip, no BEGIN/COMMIT: every row commits with the statement, which does not wait for the flush.
    assert [q["sql"].split()[0] for q in captured.captured_queries] == ["WITH"]
    assert UNFLUSHED in captured.captured_queries[0]["sql"]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)  # the setting ended with the statement
    assert Commission.objects.get().pk == commission.pk and not commission._state.adding
    stored = LedgerEntry.objects.get()
    assert (stored.pk, stored.commission_id, credit.commission_id) == (credit.pk, commission.pk, commission.pk)
    assert stored.memo == credit.memo == f"Commission #{commission.pk} 100%"
    assert [(e.pk, e.type, e.object_id, e.data) for e in WebhookEvent.objects.order_by("pk")] == [
        (event.pk, event.type, commission.pk, event.data) for event in events
    ]
    assert all(event.object_id == commission.pk and not event._state.adding for event in events)


@pytest.mark.postgres
def test_a_dependent_refers_to_a_dependent_before_it(frozen):
    """A tree in one statement: a customer, its click (refers to the customer), and a sale of the customer whose
    commission refers to the sale (a dependent of a dependent)."""
    link = ReferralLinkFactory()
    customer = Customer(program_id=link.program_id, click_id="cust_tree", first_partner_id=link.partner_id)
    click = ClickEvent(program_id=link.program_id, partner_id=link.partner_id, link=link, click_id="cust_tree")
    sale = SaleEvent(program_id=link.program_id, partner_id=link.partner_id, amount_cents=4900, sale_date=frozen)
    commission = Commission(program_id=link.program_id, partner_id=link.partner_id, amount_cents=490, hold_until=frozen)
    with CaptureQueriesContext(connection) as captured:
        insert_family(
            customer,
            [
                (click, {"customer_id": "{first_id}"}),
                (sale, {"customer_id": "{first_id}", "click_id": "'sale of ' || {dependent_1_id}"}),
                (commission, {"sale_id": "{dependent_2_id}", "customer_id": "{first_id}"}),
            ],
        )
    assert len(captured.captured_queries) == 1
    stored = Commission.objects.get()
    assert (stored.pk, stored.sale_id, stored.customer_id) == (commission.pk, sale.pk, customer.pk)
    assert (commission.sale_id, commission.customer_id) == (sale.pk, customer.pk)
    assert SaleEvent.objects.get().click_id == sale.click_id == f"sale of {click.pk}"
    assert ClickEvent.objects.get().customer_id == customer.pk


@pytest.mark.postgres
def test_insert_family_is_refused_unflushed_inside_a_transaction(frozen):
    """synchronous_commit off would reach every statement of the caller's transaction."""
    link = ReferralLinkFactory()
    commission, _, _, dependents = family(link, CustomerFactory(link=link), frozen)
    with pytest.raises(AssertionError, match="autocommit only"), transaction.atomic():
        insert_family(commission, dependents, unflushed=True)
    assert not Commission.objects.exists()


@pytest.mark.postgres
def test_insert_family_of_one_failing_dependent_stores_nothing(frozen):
    """The rows commit together or not at all: a dependent that breaks a constraint undoes the first row."""
    link = ReferralLinkFactory()
    commission, _, events, dependents = family(link, CustomerFactory(link=link), frozen)
    WebhookEvent.objects.create(public_id=events[1].public_id, program_id=link.program_id, type="x", livemode=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_family(commission, dependents)
    assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
    assert list(WebhookEvent.objects.values_list("type", flat=True)) == ["x"]


@pytest.mark.postgres
def test_rows_copy_stores_what_the_orm_reads_back_and_shows_in_the_query_log(frozen):
    program = ReferralLinkFactory().program
    row = (program.pk, frozen, "POST", "track-click", 200, "", "", "req-1", "", "", 3, '{"page_url": "é"}')
    with CaptureQueriesContext(connection) as captured:
        rows_copy(ApiCall, ("program_id", "created_at", *API_CALL_COLUMNS[2:]), [row, row])
    assert [q["sql"].split()[0] for q in captured.captured_queries] == ["COPY"]
    stored = list(ApiCall.objects.values_list("program_id", "created_at", "route", "latency_ms", "excerpt"))
    assert stored == [(program.pk, frozen, "track-click", 3, {"page_url": "é"})] * 2


@pytest.mark.postgres
def test_rows_copy_fails_as_a_django_database_error_and_stores_nothing(frozen):
    row = (None, frozen, "POST", "track-click", "not a status", "", "", "", "", "", 3, "{}")
    with pytest.raises(DataError), transaction.atomic():
        rows_copy(ApiCall, API_CALL_COLUMNS, [row])
    assert not ApiCall.objects.exists()
