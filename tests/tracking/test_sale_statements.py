"""POST /api/v1/track/sale: the statements a commissioned sale writes. On PostgreSQL a commission and its ledger
credit are one statement (core.sql.insert_pair), and a repeat sale writes it without BEGIN and COMMIT;
elsewhere (SQLite, or the portable path forced on PostgreSQL) the two INSERTs share a transaction. Both paths
store the same rows."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from commissions.models import Commission, CommissionStatus, LedgerEntry
from core import messages
from programs.models import ApiCall
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW, platform_error
from tests.tracking.sales import metrics, post_sale, sale_body
from tracking.models import Customer, SaleEvent
from tracking.services.settlement import commission_create_for_sale

pytestmark = pytest.mark.django_db


@pytest.fixture
def link():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("10"), hold_days=0)
    return ReferralLinkFactory(program=program)


@pytest.fixture
def portable(monkeypatch):
    """The path SQLite takes, forced on any database."""
    monkeypatch.setattr("commissions.approval.insert_pair_supported", lambda: False)
    monkeypatch.setattr("tracking.services.settlement.insert_pair_supported", lambda: False)


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


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
class TestOutsideATransaction:
    """As in production: no test transaction around the request, so the statements are the server's."""

    def test_a_repeat_sale_is_five_statements_with_no_begin_or_commit(self, api_client, link):
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        with CaptureQueriesContext(connection) as captured:
            response = post_sale(api_client, link.program, **sale_body(transaction_id="txn_2"))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk
        statements = [q["sql"].split()[0] for q in captured.captured_queries]
        # The key (program joined), the customer, INSERT sale, WITH (INSERT commission) INSERT ledger credit,
        # UPDATE partner-program metrics; then the request log's row in its own transaction (tests write it at
        # once; production writes one per batch of calls).
        log = ["BEGIN", "INSERT", "COMMIT"] * REQUEST_LOG_ROW
        assert statements == ["SELECT", "SELECT", "INSERT", "WITH", "UPDATE", *log]
        assert ApiCall._meta.db_table in captured.captured_queries[-2]["sql"]
        entry = LedgerEntry.objects.get(commission_id=response.json()["commission_id"])
        assert entry.memo == f"Commission #{entry.commission_id} approved"

    def test_a_first_sale_still_converts_the_customer_in_one_transaction(self, api_client, link):
        CustomerFactory(link=link, customer_key="user_1")
        with CaptureQueriesContext(connection) as captured:
            assert post_sale(api_client, link.program, **sale_body()).status_code == 200
        statements = [q["sql"].split()[0] for q in captured.captured_queries]
        begin = statements.index("BEGIN")
        assert statements[begin : begin + 5] == ["BEGIN", "SELECT", "UPDATE", "WITH", "COMMIT"]

    def test_a_sale_settled_already_returns_its_commission(self, api_client, link):
        """A concurrent run settled the sale first: the INSERT fails on the sale's one commission and the
        existing one is returned; the connection stays usable (no transaction was left broken)."""
        CustomerFactory(link=link, customer_key="user_1")
        commission_id = post_sale(api_client, link.program, **sale_body())
        sale = SaleEvent.objects.get()
        settled = commission_create_for_sale(
            sale=sale, customer=sale.customer, program=link.program, now=sale.sale_date
        )
        assert settled.commission is not None
        assert (settled.commission.pk, settled.created) == (commission_id.json()["commission_id"], False)
        assert LedgerEntry.objects.count() == 1
