"""POST /api/v1/track/sale: What POST /api/v1/track/sale answers and keeps when something fails part way."""

import logging

import pytest

from commissions.models import Commission, LedgerEntry
from core import messages
from tests.helpers import platform_error
from tests.tracking.sales import nothing_recorded, post_sale, sale_body
from tracking.models import SaleEvent
from tracking.services import sale as sale_service

pytestmark = pytest.mark.django_db


class TestFailures:
    def test_a_failed_commission_keeps_the_sale_and_a_retry_is_a_duplicate(
        self, api_client, program, customer, monkeypatch, caplog
    ):
        def boom(**kwargs):
            raise RuntimeError("commission table on fire")

        monkeypatch.setattr("tracking.services.sale.commission_create_for_sale", boom)
        with caplog.at_level(logging.ERROR, logger="svc.tracking"):
            response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 500
        assert response.json() == platform_error(
            500, "InternalServerError", messages.SALE_COMMISSION_FAILED, "internal_error"
        )
        assert response.has_header("X-Request-ID")
        assert "on fire" not in response.content.decode()
        sale = SaleEvent.objects.get()
        assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
        customer.refresh_from_db()
        assert customer.first_sale_at is None  # the commission's transaction rolled back whole
        assert any(record.message == "sale.commission_failed" for record in caplog.records)

        monkeypatch.undo()
        retry = post_sale(api_client, program, **sale_body())
        assert retry.status_code == 409
        assert retry.json() == platform_error(
            409, "ConflictError", messages.SALE_DUPLICATE, "duplicate_transaction", {"sale_id": sale.pk}
        )
        assert not Commission.objects.exists()

    def test_an_unexpected_error_before_the_sale_is_stored_is_sale_tracking_failed(
        self, api_client, program, customer, monkeypatch
    ):
        def boom(**kwargs):
            raise RuntimeError("database hiccup")

        # The customer is found; the enrolment check that follows it fails before the sale is stored.
        monkeypatch.setattr(sale_service, "enrolment_get", boom)
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 500
        assert response.json() == platform_error(
            500, "InternalServerError", messages.SALE_TRACKING_FAILED, "internal_error"
        )
        assert nothing_recorded()

        monkeypatch.undo()
        retry = post_sale(api_client, program, **sale_body())  # same transaction_id, as the spec advises
        assert retry.status_code == 200
        assert retry.json()["commission_id"] == Commission.objects.get().pk
