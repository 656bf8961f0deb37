"""POST /api/v1/track/sale: the statements a commissioned sale writes. The sale commits on its own, then its
commission with its credit; the partner-program metrics are the rollup run's to add, not the sale's. On PostgreSQL
a sale and its sale.created webhook event are one statement, and so are a commission, its ledger credit and its
commission.created and commission.approved events (core.sql.insert_family), and only the commission's commit
waits for the WAL flush (the sale's does not: core.sql.UNFLUSHED); elsewhere (SQLite, or the portable path forced on
PostgreSQL) the INSERTs share a transaction. Both paths store the same rows. Each event's fan-out is a task
queued after its commit when an endpoint wants the program's events; otherwise the sweep fans them out."""

from decimal import Decimal
from typing import Any

import pytest
from django.db import DataError, connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core import messages, sql
from core.sql import UNFLUSHED
from fraud.config import program_rules
from fraud.models import RuleSetting
from fraud.rules import Action, Rule
from groups.terms import enrolment_get
from programs.models import ApiCall
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory, WebhookEndpointFactory
from tests.helpers import REQUEST_LOG_ROW, platform_error
from tests.tracking.sales import metrics, post_sale, sale_body
from tracking.link_cache import partner_email_get
from tracking.models import Customer, SaleEvent
from tracking.services import settlement
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
    """The path SQLite takes (core.sql's INSERTs a row at a time), forced on any database."""
    monkeypatch.setitem(sql._capabilities, "default", sql.PORTABLE)


@pytest.fixture
def broker(monkeypatch) -> list[tuple[str, tuple[Any, ...]]]:
    """The tasks the request queues, kept instead of run in-process: a worker runs them in production, so the
    statements counted are the request's own."""
    queued: list[tuple[str, tuple[Any, ...]]] = []
    monkeypatch.setattr("webhooks.queue.enqueue", lambda task, *args, **options: queued.append((task.name, args)))
    return queued


def fanned_out(*types: str) -> list[tuple[str, tuple[Any, ...]]]:
    events = WebhookEvent.objects.filter(type__in=types).order_by("pk")
    return [("webhooks.fan_out", (pk,)) for pk in events.values_list("pk", flat=True)]


def two_sales(client, link) -> list[dict[str, Any]]:
    CustomerFactory(link=link, customer_key="user_1")
    first = post_sale(client, link.program, **sale_body(amount_cents=4900))
    repeat = post_sale(client, link.program, **sale_body(transaction_id="txn_2", amount_cents=1005))
    return [first.json(), repeat.json()]


def stored_money() -> list[tuple[Any, ...]]:
    return [
        (
            c.sale.processor_event_id if c.sale else None,
            c.amount_cents,
            c.status,
            c.credited,
            c.approved_at == c.created_at,
            [(e.kind, e.amount_cents, e.currency, e.program_id, e.partner_id, e.memo) for e in c.ledger_entries.all()],
        )
        for c in Commission.objects.select_related("sale").order_by("pk")
    ]


def expected_money(link) -> list[tuple[Any, ...]]:
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
    row_insert = sql._row_insert

    def boom(obj, *args, **kwargs):
        if isinstance(obj, LedgerEntry):
            raise RuntimeError("ledger on fire")
        return row_insert(obj, *args, **kwargs)

    monkeypatch.setattr(sql, "_row_insert", boom)
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
    def test_a_repeat_sale_is_one_write_statement_and_waits_for_one_flush(self, api_client, link, wanted, broker):
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        broker.clear()
        with CaptureQueriesContext(connection) as captured:
            response = post_sale(api_client, link.program, **sale_body(transaction_id="txn_2"))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk
        statements = [q["sql"].split()[0] for q in captured.captured_queries]
        # The key (program joined) and the customer; then one statement writes the sale, its sale.created event,
        # the commission, its credit and its commission.created and commission.approved events (WITH (INSERT
        # sale), (INSERT event), (INSERT commission), (INSERT credit), (INSERT event), (INSERT event)), and its
        # commit waits for the WAL flush. No UPDATE of the partner-program counters: the rollup run adds the sale
        # to them. No BEGIN/COMMIT. Then the request log's row, one COPY (tests write it at once; production
        # writes one per batch of calls).
        log = ["COPY"] * REQUEST_LOG_ROW
        assert statements == ["SELECT", "SELECT", "WITH", *log]
        assert UNFLUSHED not in captured.captured_queries[2]["sql"]
        assert ApiCall._meta.db_table in captured.captured_queries[-1]["sql"]
        entry = LedgerEntry.objects.get(commission_id=response.json()["commission_id"])
        assert entry.memo == f"Commission #{entry.commission_id} approved"
        events = WebhookEvent.objects.order_by("pk")[3:]  # the first sale's three, then this one's
        sale_id = SaleEvent.objects.get(processor_event_id="txn_2").pk
        assert Commission.objects.get(pk=entry.commission_id).sale_id == sale_id
        assert [(e.type, e.object_id) for e in events] == [
            ("sale.created", sale_id),
            ("commission.created", entry.commission_id),
            ("commission.approved", entry.commission_id),
        ]
        # The commission's events name the sale the same statement wrote.
        assert [e.data["sale_id"] for e in events[1:]] == [sale_id, sale_id]
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
        # As every sale but a process's first: the rules, the partner's email and their enrolment with its group's
        # terms (groups.terms.enrolment_get, which the sale route reads first) are cached.
        program_rules(link.program_id), partner_email_get(link.partner_id)
        enrolment_get(partner_id=link.partner_id, program_id=link.program_id)
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


# --- A repeat sale written at once (tracking.services.settlement.sale_settled_at_once) ---------------------------


def two_step(monkeypatch) -> None:
    """The sale stored first, then settled: what the at-once path must store the same."""
    monkeypatch.setattr("tracking.services.sale.sale_settled_at_once", lambda **kwargs: None)


def repeat_sale_stored(api_client, link, customer_key: str, **body) -> dict[str, Any]:
    """A converted customer's repeat sale, and everything it wrote, without ids and times."""
    customer = CustomerFactory.create(
        link=link, customer_key=customer_key, email=body.pop("email", ""), first_sale_at=timezone.now()
    )
    response = post_sale(api_client, link.program, **sale_body(customer_key=customer_key, **body))
    sale = SaleEvent.objects.get(customer=customer)
    commissions = Commission.objects.filter(sale=sale)
    own = {
        "sale_id": sale.pk,
        "customer_id": customer.pk,
        "click_id": customer.click_id,
        "transaction_id": sale.processor_event_id,
    }

    def masked(data: dict[str, Any]) -> dict[str, Any]:
        return {key: f"<{key}>" if key in own and value == own[key] else value for key, value in data.items()}

    events = WebhookEvent.objects.filter(
        Q(type__startswith="sale.", object_id=sale.pk) | Q(type__startswith="commission.", object_id__in=commissions)
    ).order_by("pk")
    answer = response.json()
    return {
        "status": response.status_code,
        "answer": {key: "<id>" if key.endswith("_id") else value for key, value in answer.items()},
        "sale": masked(
            {
                field.attname: getattr(sale, field.attname)
                for field in SaleEvent._meta.concrete_fields
                if field.attname not in ("id", "processor_event_id", "click_id", "sale_date", "created_at")
            }
        ),
        "commissions": [
            masked(
                {
                    field.attname: getattr(c, field.attname)
                    for field in Commission._meta.concrete_fields
                    if field.attname not in ("id", "hold_until", "held_at", "approved_at", "created_at", "updated_at")
                }
            )
            for c in commissions
        ],
        "ledger": [
            (e.kind, e.amount_cents, e.memo.replace(str(e.commission_id), "<commission>"))
            for e in LedgerEntry.objects.filter(commission__sale=sale).order_by("pk")
        ],
        "reviews": list(
            Commission.objects.filter(sale=sale).values_list("reviews__action", "reviews__rule", "reviews__actor")
        ),
        "events": [
            (e.type, masked({k: v for k, v in e.data.items() if not k.endswith(("_at", "_until"))})) for e in events
        ],
    }


SCENARIOS = {
    "approved at once": ({}, {}),
    "pending through a hold": ({"hold_days": 30}, {}),
    "held by a rule": ({}, {"email": "<partner>"}),
    "a renewal the program does not pay": ({}, {"is_recurring": True}),
}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
class TestARepeatSaleAtOnce:
    """A converted customer's sale, its commission and what comes with them are one statement; they store, announce
    and answer what the two-step path (the sale, then its settlement) does."""

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_it_stores_and_answers_what_the_two_step_path_does(self, api_client, link, monkeypatch, scenario):
        program_fields, body = SCENARIOS[scenario]
        for name, value in program_fields.items():
            setattr(link.program, name, value)
        link.program.save()
        RuleSetting.objects.create(program=link.program, rule=Rule.SELF_REFERRAL, enabled=True, action=Action.HOLD)
        if body.get("email"):
            body = {**body, "email": link.partner.email}
        with CaptureQueriesContext(connection) as captured:
            at_once = repeat_sale_stored(api_client, link, "user_at_once", **body)
        assert sum(q["sql"].startswith("WITH") for q in captured.captured_queries) == 1
        two_step(monkeypatch)
        stepped = repeat_sale_stored(api_client, link, "user_two_steps", transaction_id="txn_2", **body)
        assert at_once == stepped
        assert at_once["status"] == 200

    def test_the_sale_velocity_rule_counts_the_sale_stored_first(self, api_client, link):
        """sale_velocity counts the customer's stored sales, this one included: such a program's sale is stored,
        then settled (two statements), and the rule fires as it always did."""
        RuleSetting.objects.create(
            program=link.program, rule=Rule.SALE_VELOCITY, enabled=True, action=Action.HOLD, threshold=1
        )
        customer = CustomerFactory(link=link, customer_key="user_1", first_sale_at=timezone.now())
        SaleFactory(customer=customer, amount_cents=100, processor_event_id="txn_earlier")
        with CaptureQueriesContext(connection) as captured:
            response = post_sale(api_client, link.program, **sale_body())
        assert sum(q["sql"].startswith("WITH") for q in captured.captured_queries) == 2
        commission = Commission.objects.get(pk=response.json()["commission_id"])
        assert (commission.status, commission.hold_rule) == (CommissionStatus.PENDING, Rule.SALE_VELOCITY)

    def test_a_statement_failing_for_another_reason_writes_nothing_and_the_two_steps_follow(
        self, api_client, link, monkeypatch
    ):
        calls = []
        real = settlement.insert_family

        def failing_once(*args, **kwargs):
            calls.append(args[0])
            raise DataError("value out of range")

        monkeypatch.setattr(settlement, "insert_family", failing_once)
        CustomerFactory(link=link, customer_key="user_1", first_sale_at=timezone.now())
        response = post_sale(api_client, link.program, **sale_body())
        assert len(calls) == 1 and isinstance(calls[0], SaleEvent)
        monkeypatch.setattr(settlement, "insert_family", real)
        assert response.status_code == 200
        assert stored_money() == [
            (
                "txn_1",
                1000,
                CommissionStatus.APPROVED,
                True,
                True,
                [
                    (
                        "credit",
                        1000,
                        "USD",
                        link.program_id,
                        link.partner_id,
                        f"Commission #{response.json()['commission_id']} approved",
                    )
                ],
            )
        ]
        assert SaleEvent.objects.count() == 1

    def test_a_duplicate_writes_nothing(self, api_client, link):
        customer = CustomerFactory(link=link, customer_key="user_1", first_sale_at=timezone.now())
        SaleFactory(customer=customer, processor_event_id="txn_1")
        before = (SaleEvent.objects.count(), Commission.objects.count(), WebhookEvent.objects.count())
        response = post_sale(api_client, link.program, **sale_body())
        assert response.status_code == 409
        assert response.json()["error"]["details"] == {"sale_id": SaleEvent.objects.get().pk}
        assert (SaleEvent.objects.count(), Commission.objects.count(), WebhookEvent.objects.count()) == before
