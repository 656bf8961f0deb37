"""Crosses processes: the refund request commits, a real Celery worker on Redis stores the notice."""

import pytest
from rest_framework.test import APIClient

from commissions.approval import commission_approve
from commissions.models import Notification
from programs.services import program_key_regenerate
from tests.factories import CommissionFactory, SaleFactory
from tests.worker import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_real_worker_stores_the_refund_notifications(celery_worker_process):
    from django.utils import timezone

    commission = CommissionFactory(sale=SaleFactory(amount_cents=10000), amount_cents=2000, hold_until=timezone.now())
    commission_approve(commission_id=commission.pk)
    key = program_key_regenerate(program=commission.program)
    response = APIClient().post(
        "/api/v1/track/refund",
        {
            "transaction_id": commission.sale.processor_event_id,
            "refund_amount_cents": 5000,
            "refund_reason": "broken",
        },
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200 and response.json()["status"] == "refunded"
    notice = wait_for(lambda: Notification.objects.filter(commission=commission).first())
    assert notice is not None, "the worker stored no notification"
    assert (notice.audience, notice.kind) == ("partner", "commission_refunded")
    assert "broken" in notice.message
