"""POST /api/v1/track/sale: The rate limit and the query count of POST /api/v1/track/sale."""

from datetime import timedelta

import pytest

from commissions.models import Commission
from core.sql import capabilities
from tests.factories import CustomerFactory, ProgramFactory
from tests.helpers import REQUEST_LOG_ROW, assert_rate_limited, bearer
from tests.tracking.sales import REFUND_URL, nothing_recorded, post_sale, program_with, sale_body

pytestmark = pytest.mark.django_db


def family_statements(rows: int) -> int:
    """A row and the rows inserted with it (core.sql.insert_family): one statement on PostgreSQL, one INSERT per
    row elsewhere."""
    return 1 if capabilities().insert_in_with else rows


def sale_statements() -> int:
    """The sale's INSERT with its webhook event sale.created."""
    return family_statements(2)


def commission_statements(*, credited: bool) -> int:
    """The commission's INSERT with its webhook events (commission.created, and commission.approved with the
    ledger credit when credited at once)."""
    return family_statements(4 if credited else 2)


class TestRateLimit:
    def test_the_121st_call_in_a_minute_is_refused_before_anything_is_recorded(self, api_client, program, customer):
        for _ in range(120):
            assert post_sale(api_client, program).status_code == 400  # cheap calls count too
        response = post_sale(api_client, program, **sale_body())
        assert_rate_limited(response)
        assert nothing_recorded()

    def test_sale_and_refund_share_one_bucket_per_key(self, api_client, program, customer):
        for _ in range(60):
            post_sale(api_client, program)
        for _ in range(60):
            api_client.post(REFUND_URL, {}, format="json", **bearer(program.raw_api_key))
        assert post_sale(api_client, program, **sale_body()).status_code == 429
        refund = api_client.post(REFUND_URL, {"transaction_id": "txn_1"}, format="json", **bearer(program.raw_api_key))
        assert refund.status_code == 429
        other = ProgramFactory()
        assert post_sale(api_client, other, key=other.raw_api_key).status_code == 400  # its own bucket

    def test_the_bucket_empties_after_a_minute(self, api_client, program, customer, frozen, time_machine):
        for _ in range(120):
            post_sale(api_client, program)
        assert post_sale(api_client, program, **sale_body()).status_code == 429
        time_machine.move_to(frozen + timedelta(seconds=61), tick=False)
        assert post_sale(api_client, program, **sale_body()).status_code == 200


class TestQueryCount:
    def test_an_attributed_first_sale_with_a_hold_period(
        self, api_client, program, customer, django_assert_num_queries
    ):
        body = sale_body()
        # 1 program key lookup (program joined)
        # 2 customer by customer_key
        # 3 is the partner enrolled in the program (cached afterwards: see the next test)
        # 4-6 SAVEPOINT, INSERT sale with its webhook event sale.created (on PostgreSQL one statement,
        #     core.sql.insert_family; elsewhere two INSERTs), RELEASE: the sale's own transaction
        # 7 SAVEPOINT: the commission's transaction
        # 8 customer SELECT ... FOR UPDATE (no FOR UPDATE on SQLite, still one query)
        # 9 UPDATE customer first_sale_at, customer_status
        # 10 the program's fraud rules, 11 the partner's email (the self_referral rule); both cached per process
        #    afterwards, like the enrolment (see test_the_enrolment_is_read_once_then_cached)
        # 12 INSERT commission (pending: no ledger entry) with its webhook event commission.created (on
        #    PostgreSQL one statement, core.sql.insert_family; elsewhere two INSERTs)
        # 13 RELEASE SAVEPOINT
        # (Query numbers as on PostgreSQL.)
        # No UPDATE of the partner-program metrics: the rollup run adds the sale to them.
        # The savepoints exist as the test runs in a transaction; in production they are the two transactions'
        # BEGIN/COMMIT, which are not counted. No product_id, so no per-product rate lookup; the rate limit
        # lives in the cache, not the database. The events' fan-out is a task queued after the commit, which
        # the test's transaction never reaches.
        with django_assert_num_queries(
            11 + sale_statements() + commission_statements(credited=False) + REQUEST_LOG_ROW
        ):
            response = post_sale(api_client, program, **body)
        assert response.status_code == 200

    def test_an_attributed_first_sale_credited_at_once(self, api_client, link, django_assert_num_queries):
        program = program_with(link, hold_days=0)
        CustomerFactory(link=link, customer_key="user_1")
        body = sale_body()
        # 1 program key lookup (program joined)
        # 2 customer by customer_key
        # 3 is the partner enrolled in the program
        # 4-6 SAVEPOINT, INSERT sale with its webhook event sale.created, RELEASE: the sale's own transaction
        # 7 SAVEPOINT: the commission's transaction
        # 8 customer SELECT ... FOR UPDATE (no FOR UPDATE on SQLite, still one query)
        # 9 UPDATE customer first_sale_at, customer_status
        # 10 the program's fraud rules, 11 the partner's email (cached per process afterwards)
        # 12 INSERT commission (approved), its ledger credit and its webhook events commission.created and
        #    commission.approved (on PostgreSQL one statement, core.sql.insert_family; elsewhere four INSERTs)
        # 13 RELEASE SAVEPOINT
        # (No partner-program UPDATE; savepoints as in the test above; verified on SQLite and PostgreSQL.)
        with django_assert_num_queries(11 + sale_statements() + commission_statements(credited=True) + REQUEST_LOG_ROW):
            response = post_sale(api_client, program, **body)
        assert response.status_code == 200

    def test_the_enrolment_is_read_once_then_cached(
        self, api_client, program, customer, link, django_assert_num_queries
    ):
        assert post_sale(api_client, program, **sale_body()).status_code == 200
        CustomerFactory(link=link, customer_key="user_2")
        # As the first sale above, less the enrolment check (query 3), the rules and the partner's email (10, 11),
        # now in the process's cache.
        with django_assert_num_queries(8 + sale_statements() + commission_statements(credited=False) + REQUEST_LOG_ROW):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2", customer_key="user_2"))
        assert response.status_code == 200

    def test_a_repeat_sale_takes_no_customer_lock(self, api_client, program, customer, django_assert_num_queries):
        assert post_sale(api_client, program, **sale_body()).json()["commission_id"]
        # 1 program key lookup, 2 customer by customer_key (the enrolment is cached by the first sale)
        # 3-5 SAVEPOINT, INSERT sale with its webhook event sale.created (two INSERTs off PostgreSQL), RELEASE
        # 6 SAVEPOINT, 7 INSERT commission with its commission.created event (two INSERTs off PostgreSQL),
        # 8 RELEASE: the customer is converted already, so no lock; no partner-program UPDATE
        with django_assert_num_queries(6 + sale_statements() + commission_statements(credited=False) + REQUEST_LOG_ROW):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2"))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk

    def test_a_repeat_sale_within_a_recurring_period_reads_its_start(self, api_client, link, django_assert_num_queries):
        program = program_with(link, commission_type="recurring_percent", duration_months=6)
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, program, **sale_body()).json()["commission_id"]
        # As above, plus 7 the customer's first commissioned sale (MIN over the customer's commissions).
        with django_assert_num_queries(7 + sale_statements() + commission_statements(credited=False) + REQUEST_LOG_ROW):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2", is_recurring=True))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk

    def test_a_renewal_without_commission(self, api_client, program, customer, django_assert_num_queries):
        assert post_sale(api_client, program, **sale_body()).json()["commission_id"]
        # As a repeat sale, with 7 UPDATE sale no_commission_reason instead of the commission's INSERT (and no
        # commission event; the sale's sale.created is inserted with it, 4).
        with django_assert_num_queries(7 + sale_statements() + REQUEST_LOG_ROW):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2", is_recurring=True))
        assert response.json()["commission_id"] is None
