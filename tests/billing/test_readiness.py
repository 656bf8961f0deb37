"""The readiness check of connected billing platforms (billing.readiness)."""

import pytest
from django.utils import timezone

from billing.models import BillingEvent
from billing.readiness import billing_check
from billing.services import signature_failure_record
from tests.billing.conftest import connect
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db


def _event(connection, n: int, **fields):
    return BillingEvent.objects.create(
        connection=connection,
        program=connection.program,
        platform=connection.platform,
        event_id=f"evt_{n}",
        event_type="transaction.completed",
        payload={},
        **fields,
    )


def test_no_check_without_a_connection():
    assert billing_check(ProgramFactory()) is None


def test_a_connection_that_received_nothing_warns_with_what_to_do():
    connection = connect(ProgramFactory(), "paddle", "secret-0123456789")
    check = billing_check(connection.program)
    assert check is not None
    assert (check["id"], check["status"]) == ("billing_platforms", "warn")
    assert "Paddle Billing: no event received yet" in check["next_step"]


def test_signature_failures_fail_and_payments_without_attribution_warn(django_assert_num_queries):
    program = ProgramFactory()
    paddle = connect(program, "paddle", "secret-0123456789")
    polar = connect(program, "polar", "secret-0123456789")
    _event(paddle, 1, status="processed", carried_attribution=True)
    _event(polar, 2, status="processed", carried_attribution=False)
    _event(polar, 3, status="failed")
    _event(polar, 4, status="ignored", outcome="currency XYZ is not supported")
    assert billing_check(program)["status"] == "warn"
    signature_failure_record(connection=paddle, reason="Invalid signature", now=timezone.now())
    with django_assert_num_queries(1):
        check = billing_check(program)
    assert check["status"] == "fail"
    assert "Paddle Billing: deliveries failed their signature (1 in all" in check["next_step"]
    assert "Polar: 1 payment(s) in 30 days carried no svc_click_id" in check["next_step"]
    assert "Polar: 1 event(s) failed to process" in check["next_step"]
    assert "Polar: 1 payment(s) in a currency the service does not record" in check["next_step"]
    assert check["detail"].startswith("Paddle Billing: last event ")
