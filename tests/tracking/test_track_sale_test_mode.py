"""POST /api/v1/track/sale: Test-mode sales: stored apart, answered in the test body, never commissioned."""

from typing import Any

import pytest

from commissions.models import Commission, LedgerEntry
from core import messages
from tests.helpers import bad_request
from tests.tracking.sales import metrics, nothing_recorded, post_sale, sale_body
from tracking.models import SaleEvent, TrackingLog

pytestmark = pytest.mark.django_db


class TestTestMode:
    def expected_body(self, sale, program) -> dict[str, Any]:
        return {
            "success": True,
            "message": messages.SALE_TEST_RECORDED,
            "data": {"eventId": sale.pk, "programId": program.pk, "test_mode": True},
        }

    @pytest.mark.parametrize(
        ("extra", "use_test_key"),
        [({"additional_data": {"test_mode": True}}, False), ({"livemode": False}, False), ({}, True)],
        ids=["body-flag", "livemode-false", "test-key"],
    )
    def test_each_trigger_records_a_flagged_sale_without_commission(
        self, api_client, program, link, customer, extra, use_test_key
    ):
        key = program.raw_test_api_key if use_test_key else program.raw_api_key
        response = post_sale(api_client, program, key=key, **sale_body(**extra))
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        assert response.json() == self.expected_body(sale, program)
        assert sale.is_test is True
        assert sale.processor_event_id == "txn_1"
        assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
        assert metrics(link) == (0, 0)
        log = TrackingLog.objects.get()
        assert (log.event, log.outcome, log.is_test, log.program_id) == ("sale", "test", True, program.pk)

    @pytest.mark.parametrize(
        ("extra", "use_test_key"),
        [({"additional_data": {"test_mode": True}}, False), ({"livemode": False}, False), ({}, True)],
        ids=["body-flag", "livemode-false", "test-key"],
    )
    def test_transaction_id_and_amount_are_optional(self, api_client, program, extra, use_test_key):
        key = program.raw_test_api_key if use_test_key else program.raw_api_key
        first = post_sale(api_client, program, key=key, **extra)
        second = post_sale(api_client, program, key=key, **extra)
        assert (first.status_code, second.status_code) == (200, 200)
        assert SaleEvent.objects.filter(is_test=True, processor_event_id=None, amount_cents=0).count() == 2

    def test_a_test_sale_does_not_block_a_live_sale_with_the_same_transaction_id(self, api_client, program, customer):
        test = post_sale(api_client, program, **sale_body(livemode=False))
        live = post_sale(api_client, program, **sale_body())
        assert test.status_code == 200
        assert live.status_code == 200
        assert live.json()["commission_id"] == Commission.objects.get().pk
        assert sorted(SaleEvent.objects.values_list("is_test", flat=True)) == [False, True]

    def test_a_test_sale_does_not_use_up_the_real_customers_first_sale(self, api_client, program, customer):
        post_sale(api_client, program, key=program.raw_test_api_key, **sale_body(transaction_id="test_1"))
        customer.refresh_from_db()
        assert customer.first_sale_at is None
        live = post_sale(api_client, program, **sale_body(transaction_id="live_1"))
        assert live.json()["message"] == messages.SALE_RECORDED

    def test_a_test_sale_still_checks_the_body(self, api_client, program):
        response = post_sale(api_client, program, amount_cents=-1, additional_data={"test_mode": True})
        assert response.json() == bad_request(messages.SALE_AMOUNT_REQUIRED, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize(
        ("extra", "use_test_key"),
        [
            ({"livemode": True}, True),
            ({"livemode": True, "additional_data": {"test_mode": True}}, False),
            ({"additional_data": {"test_mode": False}}, True),
        ],
        ids=["livemode-true-with-test-key", "livemode-true-with-body-flag", "body-flag-false-with-test-key"],
    )
    def test_nothing_in_the_body_forces_a_live_sale(self, api_client, program, customer, extra, use_test_key):
        key = program.raw_test_api_key if use_test_key else program.raw_api_key
        response = post_sale(api_client, program, key=key, **sale_body(**extra))
        assert response.json()["data"]["test_mode"] is True
        assert SaleEvent.objects.get().is_test is True
        assert not Commission.objects.exists()

    def test_livemode_true_is_a_live_sale(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(livemode=True))
        assert response.json()["commission_id"] == Commission.objects.get().pk
        assert SaleEvent.objects.get().is_test is False
