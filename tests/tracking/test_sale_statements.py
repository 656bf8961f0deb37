"""POST /api/v1/track/sale: the statements a commissioned sale writes. The sale commits on its own, then its
commission with its credit; the partner-program metrics are the rollup run's to add, not the sale's. On PostgreSQL
a sale and its sale.created webhook event are one statement, and so are a commission, its ledger credit and its
commission.created and commission.approved events (core.sql.insert_family), and only the commission's commit
waits for the WAL flush (the sale's does not: core.sql.UNFLUSHED); elsewhere (SQLite, or the portable path forced on
PostgreSQL) the INSERTs share a transaction. Both paths store the same rows. Each event's fan-out is a task
queued after its commit when an endpoint wants the program's events; otherwise the sweep fans them out."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core import messages
from core.sql import UNFLUSHED
from fraud.config import program_rules
from programs.models import ApiCall
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory, WebhookEndpointFactory
from tests.helpers import REQUEST_LOG_ROW, platform_error
from tests.tracking.sales import metrics, post_sale, sale_body
from tracking.link_cache import partner_email_get
from tracking.models import Customer, SaleEvent
from tracking.services.settlement import commission_create_for_sale
from webhooks.events import program_has_endpoints
from webhooks.fanout import webhooks_sweep
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def link():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("10"), hold_days=0)
    return ReferralLinkFactory(program=program)


@pytest.fixture
def wanted(link):
    """An endpoint wants the program's events, and this process knows it (its cache is warm, as on a busy server):
    each event's fan-out is queued once its row commits. Without one, the sweep fans events out in batches."""
    WebhookEndpointFactory(program=link.program)
    assert program_has_endpoints(link.program_id)


@pytest.fixture
def portable(monkeypatch):
    """The path SQLite takes, forced on any database."""
    monkeypatch.setattr("commissions.approval.insert_pair_supported", lambda: False)
    monkeypatch.setattr("tracking.services.settlement.insert_pair_supported", lambda: False)


@pytest.fixture
def broker(monkeypatch) -> list[tuple[str, tuple]]:
    """The tasks the request queues, kept instead of run in-process: a worker runs them in production, so the
    statements counted are the request's own."""
    queued: list[tuple[str, tuple]] = []
    monkeypatch.setattr("webhooks.queue.enqueue", lambda task, *args, **options: queued.append((task.name, args)))
    return queued


def fanned_out(*types: str) -> list[tuple[str, tuple]]:
    events = WebhookEvent.objects.filter(type__in=types).order_by("pk")
    return [("webhooks.fan_out", (pk,)) for pk in events.values_list("pk", flat=True)]


def two_sales(client, link) -> list[dict]:
    CustomerFactory(link=link, customer_key="user_1")
    first = post_sale(client, link.program, **sale_body(amount_cents=4900))
    repeat = post_sale(client, link.program, **sale_body(transaction_id="txn_2", amount_cents=1005))
    return [first.json(), repeat.json()]


def stored_money() -> list[tuple]:
    return [
        (
            c.sale.processor_event_id,
            c.amount_cents,
            c.status,
            c.credited,
            c.approved_at == c.created_at,
            [(e.kind, e.amount_cents, e.currency, e.program_id, e.partner_id, e.memo) for e in c.ledger_entries.all()],
        )
        for c in Commission.objects.select_related("sale").order_by("pk")
    ]


def expected_money(link) -> list[tuple]:
    ids = list(Commission.objects.order_by("pk").values_list("pk", flat=True))
    return [
        (
            txn,
            amount,
            CommissionStatus.APPROVED,
            True,
            True,
            [("credit", amount, "USD", link.program_id, link.partner_id, f"Commission #{pk} approved")],
        )
        for txn, amount, pk in zip(("txn_1", "txn_2"), (490, 101), ids, strict=True)
    ]


@pytest.mark.parametrize("path", ["native", "portable"])
def test_both_paths_store_the_same_commissions_credits_and_metrics(request, api_client, link, path):
    if path == "portable":
        request.getfixturevalue("portable")
    answers = two_sales(api_client, link)
    assert [a["message"] for a in answers] == [messages.SALE_RECORDED] * 2
    assert [a["commission_id"] for a in answers] == list(Commission.objects.order_by("pk").values_list("pk", flat=True))
    assert stored_money() == expected_money(link)
    assert metrics(link) == (2, 4900 + 1005)
    assert Customer.objects.get().customer_status == "converted"


def test_a_failed_credit_on_the_portable_path_leaves_no_commission(api_client, link, portable, monkeypatch):
    def boom(commission):
        raise RuntimeError("ledger on fire")

    monkeypatch.setattr("commissions.approval.ledger_credit", boom)
    CustomerFactory(link=link, customer_key="user_1")
    response = post_sale(api_client, link.program, **sale_body())
    assert response.status_code == 500
    assert response.json() == platform_error(
        500, "InternalServerError", messages.SALE_COMMISSION_FAILED, "internal_error"
    )
    assert SaleEvent.objects.count() == 1
    assert not Commission.objects.exists() and not LedgerEntry.objects.exists()


@pytest.mark.django_db(transaction=True)
class TestOutsideATransaction:
    """As in production: no test transaction around the request."""

    def test_a_duplicate_is_409_and_changes_nothing(self, api_client, link):
        CustomerFactory(link=link, customer_key="user_1")
        first = post_sale(api_client, link.program, **sale_body())
        again = post_sale(api_client, link.program, **sale_body())
        assert again.status_code == 409
        assert again.json() == platform_error(
            409, "ConflictError", messages.SALE_DUPLICATE, "duplicate_transaction", {"sale_id": first.json()["sale_id"]}
        )
        assert (SaleEvent.objects.count(), Commission.objects.count(), LedgerEntry.objects.count()) == (1, 1, 1)
        assert metrics(link) == (1, 10000)

    def test_a_failed_commission_keeps_the_sale_alone(self, api_client, link, monkeypatch):
        def boom(**kwargs):
            raise RuntimeError("commission table on fire")

        monkeypatch.setattr("tracking.services.sale.commission_create_for_sale", boom)
        CustomerFactory(link=link, customer_key="user_1")
        response = post_sale(api_client, link.program, **sale_body())
        assert response.json() == platform_error(
            500, "InternalServerError", messages.SALE_COMMISSION_FAILED, "internal_error"
        )
        assert SaleEvent.objects.count() == 1
        assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
        assert Customer.objects.get().first_sale_at is None
        # A live sale with a partner is on the partner's counters once the rollup run adds it, whatever its
        # commission (the reconciler completes that).
        assert metrics(link) == (1, 10000)

    @pytest.mark.postgres
    def test_a_repeat_sale_is_four_statements_and_waits_for_one_flush(self, api_client, link, wanted, broker):
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        broker.clear()
        with CaptureQueriesContext(connection) as captured:
            response = post_sale(api_client, link.program, **sale_body(transaction_id="txn_2"))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk
        statements = [q["sql"].split()[0] for q in captured.captured_queries]
        # The key (program joined) and the customer; the sale with its sale.created event (WITH (INSERT sale)
        # INSERT event), whose commit does not wait for the WAL flush (set_config: that statement's transaction
        # only); the commission with its credit and its commission.created and commission.approved events (WITH
        # (INSERT commission), (INSERT credit), (INSERT event), (INSERT event)), whose commit flushes the
        # sale's too. No UPDATE of the partner-program counters: the rollup run adds the sale to them. No
        # BEGIN/COMMIT: each is one statement. Then the request log's row, one COPY (tests write it at once;
        # production writes one per batch of calls).
        log = ["COPY"] * REQUEST_LOG_ROW
        assert statements == ["SELECT", "SELECT", "WITH", "WITH", *log]
        sql = [q["sql"] for q in captured.captured_queries]
        assert [UNFLUSHED in sql[2], UNFLUSHED in sql[3]] == [True, False]
        assert ApiCall._meta.db_table in captured.captured_queries[-1]["sql"]
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("on",)  # the setting ended with each statement
        entry = LedgerEntry.objects.get(commission_id=response.json()["commission_id"])
        assert entry.memo == f"Commission #{entry.commission_id} approved"
        events = WebhookEvent.objects.order_by("pk")[3:]  # the first sale's three, then this one's
        sale_id = SaleEvent.objects.get(processor_event_id="txn_2").pk
        assert [(e.type, e.object_id) for e in events] == [
            ("sale.created", sale_id),
            ("commission.created", entry.commission_id),
            ("commission.approved", entry.commission_id),
        ]
        # Each event's fan-out queued once its row committed: a broker message each, no statement here.
        assert broker == [("webhooks.fan_out", (e.pk,)) for e in events]

    @pytest.mark.postgres
    def test_without_a_broker_and_no_endpoint_the_request_fans_nothing_out(self, api_client, link):
        """No endpoint wants the program's events: the request queues (or, without a broker, runs) no fan-out;
        the sweep fans the three out in one batch."""
        CustomerFactory(link=link, customer_key="user_1")
        with CaptureQueriesContext(connection) as captured:
            assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        assert not any(
            WebhookEvent._meta.db_table in q["sql"] for q in captured.captured_queries[3:] if "UPDATE" in q["sql"]
        )
        assert WebhookEvent.objects.filter(fanned_out_at__isnull=True).count() == 3
        webhooks_sweep()
        assert not WebhookEvent.objects.filter(fanned_out_at__isnull=True).exists()

    @pytest.mark.postgres
    def test_without_a_broker_each_fan_out_commits_without_waiting_for_the_flush(self, api_client, link, wanted):
        """Tasks run in the request when there is no broker (the default): with an endpoint, the three events'
        fan-outs then add a transaction each, but no wait for a WAL flush (webhooks.fanout._commit_unflushed)."""
        CustomerFactory(link=link, customer_key="user_1")
        with CaptureQueriesContext(connection) as captured:
            assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        sql = [q["sql"] for q in captured.captured_queries]
        unflushed = [i for i, text in enumerate(sql) if text == "SET LOCAL synchronous_commit TO OFF"]
        assert len(unflushed) == 3 and all(sql[i - 1] == "BEGIN" for i in unflushed)
        assert not WebhookEvent.objects.filter(fanned_out_at__isnull=True).exists()
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("on",)  # SET LOCAL ended with each fan-out's transaction

    @pytest.mark.postgres
    def test_a_first_sale_converts_the_customer_in_the_commission_transaction(self, api_client, link, wanted, broker):
        CustomerFactory(link=link, customer_key="user_1")
        with CaptureQueriesContext(connection) as captured:
            assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        statements = [q["sql"].split()[0] for q in captured.captured_queries]
        settling = statements.index("BEGIN")
        # The customer's row lock, its conversion, the program's fraud rules and the partner's email (both cold
        # here, cached per process afterwards), the commission with its credit and its events; then only the
        # request log (no partner-program UPDATE: the rollup run counts the sale).
        assert statements[settling:] == [
            "BEGIN",
            "SELECT",
            "UPDATE",
            "SELECT",
            "SELECT",
            "WITH",
            "COMMIT",
            *["COPY"] * REQUEST_LOG_ROW,
        ]
        assert "FOR NO KEY UPDATE" in captured.captured_queries[settling + 1]["sql"]
        assert broker == fanned_out("sale.created", "commission.created", "commission.approved")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
class TestSettlingOutsideATransaction:
    """commission_create_for_sale on its own (the reconciler, the step-by-step path): a repeat sale's
    commission with its credit is one statement, without BEGIN and COMMIT."""

    def test_a_repeat_sale_is_settled_in_one_statement(self, link, wanted, broker):
        customer = CustomerFactory(link=link, customer_key="user_1", first_sale_at=timezone.now())
        sale = SaleFactory(customer=customer, amount_cents=4900)
        program_rules(link.program_id), partner_email_get(link.partner_id)  # as every sale but a process's first
        with CaptureQueriesContext(connection) as captured:
            settled = commission_create_for_sale(sale=sale, customer=customer, program=link.program, now=sale.sale_date)
        assert [q["sql"].split()[0] for q in captured.captured_queries] == ["WITH"]
        assert broker == fanned_out("commission.created", "commission.approved")
        assert settled.commission is not None and settled.created
        credit = (
            "credit",
            490,
            "USD",
            link.program_id,
            link.partner_id,
            f"Commission #{settled.commission.pk} approved",
        )
        assert stored_money() == [(sale.processor_event_id, 490, CommissionStatus.APPROVED, True, True, [credit])]

    def test_a_sale_settled_already_returns_its_commission(self, api_client, link):
        """A concurrent run settled the sale first: the INSERT fails on the sale's one commission and the
        existing one is returned; the connection stays usable (no transaction was left broken)."""
        CustomerFactory(link=link, customer_key="user_1")
        commission_id = post_sale(api_client, link.program, **sale_body()).json()["commission_id"]
        sale = SaleEvent.objects.get()
        settled = commission_create_for_sale(
            sale=sale, customer=sale.customer, program=link.program, now=sale.sale_date
        )
        assert settled.commission is not None
        assert (settled.commission.pk, settled.created) == (commission_id, False)
        assert LedgerEntry.objects.count() == 1
