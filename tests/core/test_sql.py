"""core.sql writes what save() writes: its INSERT text and values match Django's insert compiler for the models the
hot paths insert with it, and insert_pair and insert_family store every row and set their ids as save() would."""

import json
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models.signals import post_save, pre_save
from django.db.models.sql import InsertQuery
from django.test.utils import CaptureQueriesContext

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core import sql
from core.sql import (
    UNFLUSHED,
    WRITTEN_BY_HAND,
    SqlValue,
    insert_family,
    insert_pair,
    insert_params,
    insert_sql,
    inserted_fields,
    rows_copy,
)
from programs.calllog import ROW_COLUMNS as API_CALL_COLUMNS
from programs.models import ApiCall, ReferralLink
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


# --- Every database: a row at a time where a family cannot be one statement ----------------------------------------


@pytest.fixture
def portable(monkeypatch):
    """The way SQLite writes (a row at a time, in a transaction; multi-row INSERTs for rows_copy), forced on any
    database."""
    monkeypatch.setitem(sql._capabilities, "default", sql.PORTABLE)


@pytest.fixture(params=["native", "portable"])
def either_way(request):
    """The database's own way, then the portable one (the same on SQLite)."""
    if request.param == "portable":
        request.getfixturevalue("portable")
    return request.param


def tree(link, frozen):
    """A customer, its click, a sale of the customer and the sale's commission, none saved, as insert_family's
    arguments: a text over the first id, one over a dependent's, an SqlValue, a dependent of a dependent."""
    customer = Customer(program_id=link.program_id, click_id="cust_tree", first_partner_id=link.partner_id)
    click = ClickEvent(program_id=link.program_id, partner_id=link.partner_id, link=link, click_id="cust_tree")
    sale = SaleEvent(program_id=link.program_id, partner_id=link.partner_id, amount_cents=4900, sale_date=frozen)
    commission = Commission(program_id=link.program_id, partner_id=link.partner_id, amount_cents=490, hold_until=frozen)
    dependents: list[tuple[Any, dict[str, str | SqlValue]]] = [
        (click, {"customer_id": "{first_id}", "page_title": ("%s || ' of ' || {first_id}", ["visit"])}),
        (sale, {"customer_id": "{first_id}", "click_id": "'sale of ' || {dependent_1_id} || ' 100%%'"}),
        (commission, {"sale_id": "{dependent_2_id}", "customer_id": "{first_id}"}),
    ]
    return customer, dependents


def test_a_family_is_stored_a_row_at_a_time_with_the_same_links(frozen, portable):
    link = ReferralLinkFactory()
    customer, dependents = tree(link, frozen)
    (click, _), (sale, _), (commission, _) = dependents
    with CaptureQueriesContext(connection) as captured:
        assert insert_family(customer, dependents)
    # Inside the test's transaction no savepoint was asked for: the four INSERTs alone.
    assert [q["sql"].split()[0] for q in captured.captured_queries] == ["INSERT"] * 4
    assert Customer.objects.get().pk == customer.pk and not customer._state.adding
    stored = Commission.objects.get()
    assert (stored.pk, stored.sale_id, stored.customer_id) == (commission.pk, sale.pk, customer.pk)
    assert (commission.sale_id, commission.customer_id) == (sale.pk, customer.pk)
    assert SaleEvent.objects.get().click_id == sale.click_id == f"sale of {click.pk} 100%"
    stored_click = ClickEvent.objects.get()
    assert (stored_click.customer_id, stored_click.page_title) == (customer.pk, f"visit of {customer.pk}")
    assert all(not obj._state.adding and obj._state.db == "default" for obj, _ in dependents)


def stored_rows(model, *, without: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    """Every stored row of `model` as the database holds it (raw, without the ORM's converters), in id order, the
    id and the columns `without` left out."""
    columns = [f.column for f in model._meta.concrete_fields if not f.primary_key and f.attname not in without]
    quoted = ", ".join(connection.ops.quote_name(column) for column in columns)
    table, pk = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(model._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quoted} FROM {table} ORDER BY {pk}")
        return [tuple(row) for row in cursor.fetchall()]


@pytest.mark.postgres
def test_both_ways_store_the_same_rows(frozen, monkeypatch):
    """A commission with its credit and events, written as one statement and then a row at a time, stores the same
    values, byte for byte, but for the ids (a sale each, new rows)."""
    link = ReferralLinkFactory()
    customer = CustomerFactory(link=link)
    for way in ("native", "portable"):
        if way == "portable":
            monkeypatch.setitem(sql._capabilities, "default", sql.PORTABLE)
        commission, credit, events, dependents = family(link, customer, frozen)
        for event in events:
            event.public_id += f"_{way}"
        assert insert_family(commission, dependents)
        assert credit.memo == f"Commission #{commission.pk} 100%"
    commissions = stored_rows(Commission, without=("sale_id",))
    credits = stored_rows(LedgerEntry, without=("commission_id", "memo"))
    events = stored_rows(WebhookEvent, without=("object_id", "public_id"))
    assert len(commissions) == len(credits) == 2 and len(events) == 4
    assert commissions[0] == commissions[1] and credits[0] == credits[1] and events[:2] == events[2:]
    ids = list(Commission.objects.order_by("pk").values_list("pk", flat=True))
    assert list(LedgerEntry.objects.order_by("pk").values_list("commission_id", "memo")) == [
        (pk, f"Commission #{pk} 100%") for pk in ids
    ]
    assert list(WebhookEvent.objects.order_by("pk").values_list("object_id", flat=True)) == [ids[0]] * 2 + [ids[1]] * 2


@pytest.mark.parametrize("holds", [True, False])
def test_a_guard_is_checked_as_the_first_row_is_inserted(frozen, either_way, holds):
    link = ReferralLinkFactory()
    customer = Customer(program_id=link.program_id, click_id="cust_guard", first_partner_id=link.partner_id)
    event = ClickEvent(program_id=link.program_id, partner_id=link.partner_id, link=link, click_id="cust_guard")
    table = connection.ops.quote_name(ReferralLink._meta.db_table)
    guard = (f"EXISTS (SELECT 1 FROM {table} WHERE id = %s AND is_active = %s)", [link.pk, holds])
    inserted = insert_pair(customer, event, refers={"customer_id": "{first_id}"}, guard=guard)
    assert inserted is holds
    assert (Customer.objects.count(), ClickEvent.objects.count()) == ((1, 1) if holds else (0, 0))
    assert customer._state.adding is event._state.adding is (not holds)
    assert (customer.pk is None) is (event.pk is None) is (not holds)


def test_a_failing_dependent_stores_nothing_a_row_at_a_time(frozen, portable):
    link = ReferralLinkFactory()
    commission, _, events, dependents = family(link, CustomerFactory(link=link), frozen)
    WebhookEvent.objects.create(public_id=events[1].public_id, program_id=link.program_id, type="x", livemode=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_family(commission, dependents)
    assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
    assert list(WebhookEvent.objects.values_list("type", flat=True)) == ["x"]
    assert commission.pk is None and commission._state.adding


def test_a_savepoint_keeps_a_failure_from_breaking_the_callers_transaction(frozen, either_way):
    link = ReferralLinkFactory()
    customer = CustomerFactory(link=link)
    commission, _, events, dependents = family(link, customer, frozen)
    WebhookEvent.objects.create(public_id=events[0].public_id, program_id=link.program_id, type="x", livemode=True)
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            insert_family(commission, dependents, savepoint=True)
        # The caller's transaction goes on: its next statement runs, and nothing of the family was kept.
        assert not Commission.objects.exists() and Customer.objects.filter(pk=customer.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_unflushed_is_a_plain_commit_where_the_database_has_no_such_setting(frozen, portable):
    link = ReferralLinkFactory()
    commission, _, events, dependents = family(link, CustomerFactory(link=link), frozen)
    with CaptureQueriesContext(connection) as captured:
        assert insert_family(commission, dependents, unflushed=True)
    assert not any(UNFLUSHED in q["sql"] for q in captured.captured_queries)
    assert Commission.objects.get().pk == commission.pk
    assert WebhookEvent.objects.count() == len(events)


def api_call_rows(program, frozen, count: int) -> list[tuple[Any, ...]]:
    return [
        (program.pk, frozen, "POST", "track-click", 200, "", "", f"req-{n}", "", "", n, json.dumps({"page_url": "é"}))
        for n in range(count)
    ]


def test_rows_copy_elsewhere_stores_what_bulk_create_stores(frozen, portable):
    """The values as rows_copy takes them (the excerpt as its JSON text), each other value through its field: the
    row bulk_create writes, byte for byte."""
    program = ReferralLinkFactory().program
    [row] = api_call_rows(program, frozen, 1)
    with CaptureQueriesContext(connection) as captured:
        rows_copy(ApiCall, API_CALL_COLUMNS, [row])
    assert [q["sql"].split()[0] for q in captured.captured_queries] == ["INSERT"]
    copied = stored_rows(ApiCall)
    ApiCall.objects.all().delete()
    values = dict(zip(API_CALL_COLUMNS, row, strict=True))
    ApiCall.objects.bulk_create([ApiCall(**{**values, "excerpt": json.loads(values["excerpt"])})])
    assert copied == stored_rows(ApiCall)
    assert list(ApiCall.objects.values_list("created_at", "excerpt")) == [(frozen, {"page_url": "é"})]


def test_rows_copy_elsewhere_writes_a_long_batch_in_several_statements(frozen, portable):
    program = ReferralLinkFactory().program
    rows = api_call_rows(program, frozen, 300)
    per_statement = connection.ops.bulk_batch_size([ApiCall._meta.get_field(name) for name in API_CALL_COLUMNS], rows)
    with CaptureQueriesContext(connection) as captured:
        rows_copy(ApiCall, API_CALL_COLUMNS, rows)
    inserts = [q for q in captured.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == -(-len(rows) // per_statement)
    assert sorted(ApiCall.objects.values_list("latency_ms", flat=True)) == list(range(300))


# --- No save signal for the rows written by hand ---------------------------------------------------------------------


def save_receivers_of_written_by_hand() -> list[str]:
    return [
        f"{signal_name} has a receiver for {label}"
        for label in sorted(WRITTEN_BY_HAND)
        for signal_name, signal in (("pre_save", pre_save), ("post_save", post_save))
        if signal.has_listeners(apps.get_model(label))
    ]


def test_no_save_signal_receiver_is_connected_to_a_model_written_by_hand():
    """core.sql writes these models' rows without save(), so no pre_save or post_save signal is ever sent for
    them: a receiver connected to one would silently miss every row the hot paths write. Do its work where the
    rows are written instead (or write them through save())."""
    assert save_receivers_of_written_by_hand() == [], "these rows never go through save() (core.sql.WRITTEN_BY_HAND)"


def test_a_receiver_connected_to_one_is_found():
    def receiver(**kwargs):
        pass

    post_save.connect(receiver, sender=SaleEvent, weak=False, dispatch_uid="test-written-by-hand")
    try:
        assert save_receivers_of_written_by_hand() == ["post_save has a receiver for tracking.SaleEvent"]
    finally:
        post_save.disconnect(sender=SaleEvent, dispatch_uid="test-written-by-hand")


def test_the_writers_refuse_a_model_not_listed(frozen):
    link = ReferralLinkFactory()
    with pytest.raises(TypeError, match="not in core.sql.WRITTEN_BY_HAND"):
        insert_params(ReferralLink(program_id=link.program_id, partner_id=link.partner_id, short_link="x"))
    with pytest.raises(TypeError, match="not in core.sql.WRITTEN_BY_HAND"):
        rows_copy(ReferralLink, ("short_link",), [("x",)])
    assert sorted(apps.get_model(label)._meta.label for label in WRITTEN_BY_HAND) == sorted(WRITTEN_BY_HAND)
