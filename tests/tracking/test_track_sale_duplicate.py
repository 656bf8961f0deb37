"""Duplicate transaction ids on POST /api/v1/track/sale: a 409 that names the first sale, never a second
sale or commission, across programs and under concurrent delivery (the unique constraint decides)."""

from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from commissions.models import Commission, LedgerEntry
from core import messages
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import run_together
from tests.tracking.sales import metrics
from tracking.models import Customer, SaleEvent

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/sale"
THREADS = 20


def post_sale(client, key: str, **body):
    return client.post(URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {key}")


def duplicate(sale_id: int) -> dict[str, Any]:
    return {
        "data": None,
        "error": {
            "status": 409,
            "name": "ConflictError",
            "message": messages.SALE_DUPLICATE,
            "details": {"sale_id": sale_id},
            "code": "duplicate_transaction",
        },
    }


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link, customer_key="user_1", customer_status="lead")


def sale_body(**overrides) -> dict[str, Any]:
    return {"transaction_id": "txn_dup", "amount_cents": 10000, "customer_key": "user_1", **overrides}


def test_it_answers_409_with_the_first_sale_id_and_records_nothing_more(api_client, program, link, customer):
    first = post_sale(api_client, program.raw_api_key, **sale_body())
    assert first.status_code == 200
    sale_id = first.json()["sale_id"]

    again = post_sale(api_client, program.raw_api_key, **sale_body())
    assert again.status_code == 409
    assert again.json() == duplicate(sale_id)
    assert SaleEvent.objects.count() == 1
    assert Commission.objects.count() == 1
    assert LedgerEntry.objects.count() == 1
    assert metrics(link) == (1, 10000)


def test_a_resend_with_another_amount_or_customer_is_still_a_duplicate(api_client, program, link, customer):
    sale_id = post_sale(api_client, program.raw_api_key, **sale_body()).json()["sale_id"]
    other = CustomerFactory(link=link, customer_key="user_2")
    again = post_sale(api_client, program.raw_api_key, **sale_body(amount_cents=99, customer_key=other.customer_key))
    assert again.json() == duplicate(sale_id)
    assert SaleEvent.objects.get().amount_cents == 10000
    assert Commission.objects.count() == 1


def test_duplicates_are_global_across_programs(api_client, program, customer):
    sale_id = post_sale(api_client, program.raw_api_key, **sale_body()).json()["sale_id"]
    second_program = ProgramFactory()
    CustomerFactory(link=ReferralLinkFactory(program=second_program), customer_key="user_1")

    again = post_sale(api_client, second_program.raw_api_key, **sale_body())
    assert again.status_code == 409
    assert again.json() == duplicate(sale_id)
    assert SaleEvent.objects.count() == 1
    assert not SaleEvent.objects.filter(program=second_program).exists()
    assert Commission.objects.count() == 1


def test_test_sales_are_unique_among_test_sales(api_client, program):
    first = post_sale(api_client, program.raw_test_api_key, transaction_id="txn_test")
    assert first.status_code == 200
    again = post_sale(api_client, program.raw_api_key, transaction_id="txn_test", livemode=False)
    assert again.status_code == 409
    assert again.json() == duplicate(first.json()["data"]["eventId"])
    assert SaleEvent.objects.count() == 1


def test_a_live_sale_does_not_block_a_test_sale_with_the_same_id(api_client, program, customer):
    live = post_sale(api_client, program.raw_api_key, **sale_body())
    test = post_sale(api_client, program.raw_test_api_key, **sale_body())
    assert (live.status_code, test.status_code) == (200, 200)
    assert test.json()["data"]["test_mode"] is True
    assert sorted(SaleEvent.objects.values_list("is_test", flat=True)) == [False, True]
    assert Commission.objects.count() == 1


def test_a_sale_without_commission_is_a_duplicate_too(api_client, program, customer):
    post_sale(api_client, program.raw_api_key, **sale_body(transaction_id="t1"))
    second = post_sale(api_client, program.raw_api_key, **sale_body(transaction_id="t2", is_recurring=True))
    assert second.json()["commission_id"] is None
    again = post_sale(api_client, program.raw_api_key, **sale_body(transaction_id="t2"))
    assert again.json() == duplicate(second.json()["sale_id"])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_deliveries_of_one_transaction_id_record_one_sale():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    CustomerFactory(link=link, customer_key="user_1")
    key = program.raw_api_key

    def send(n):
        response = post_sale(APIClient(), key, **sale_body())
        return response.status_code, response.json()

    results = run_together(THREADS, send)
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * (THREADS - 1)
    [winner] = [body for status, body in results if status == 200]
    sale = SaleEvent.objects.get()
    assert winner == {
        "success": True,
        "sale_id": sale.pk,
        "commission_id": Commission.objects.get().pk,
        "message": messages.SALE_RECORDED,
    }
    for status, body in results:
        if status == 409:
            assert body == duplicate(sale.pk)
    assert LedgerEntry.objects.count() == 1
    assert metrics(link) == (1, 10000)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_sales_of_one_customer_each_pay_and_convert_the_customer_once():
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link, customer_key="user_1")
    key = program.raw_api_key

    def send(n):
        response = post_sale(APIClient(), key, **sale_body(transaction_id=f"txn_{n}", amount_cents=1000 + 5 * n))
        return response.status_code, response.json()

    results = run_together(THREADS, send)
    assert [status for status, _ in results] == [200] * THREADS
    assert {body["message"] for _, body in results} == {messages.SALE_RECORDED}
    assert SaleEvent.objects.count() == THREADS
    commissions = {c.sale_id: c for c in Commission.objects.select_related("sale")}
    assert {body["commission_id"] for _, body in results} == {c.pk for c in commissions.values()}
    assert len(commissions) == THREADS
    for commission in commissions.values():
        assert commission.amount_cents == commission.sale.amount_cents // 5
    assert LedgerEntry.objects.filter(kind="credit").count() == THREADS
    customer = Customer.objects.get(pk=customer.pk)
    assert customer.customer_status == "converted"
    assert customer.first_sale_at == SaleEvent.objects.order_by("sale_date").first().sale_date
    assert metrics(link) == (THREADS, sum(1000 + 5 * n for n in range(THREADS)))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_renewals_on_a_one_off_program_are_all_stored_unpaid():
    program = ProgramFactory(commission_type="fixed", commission_rate=Decimal("500"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    CustomerFactory(link=link, customer_key="user_1")
    key = program.raw_api_key

    def send(n):
        response = post_sale(APIClient(), key, **sale_body(transaction_id=f"renewal_{n}", is_recurring=True))
        return response.status_code, response.json()

    results = run_together(THREADS, send)
    assert [status for status, _ in results] == [200] * THREADS
    assert {(body["commission_id"], body["message"]) for _, body in results} == {
        (None, messages.SALE_RECORDED_RENEWAL_NOT_PAID)
    }
    assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
    assert set(SaleEvent.objects.values_list("no_commission_reason", flat=True)) == {"renewal_not_recurring"}
