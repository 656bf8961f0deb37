"""The refund's test-mode rule is the refund service's (tracking.services.refund.refund_record), so every caller
gets it: the test key, or additional_data.test_mode with any key, refunds nothing and never reads the refund."""

import pytest

from commissions.models import Commission
from commissions.services import RefundOutcome
from programs.models import ProgramKey
from tests.factories import CommissionFactory, SaleFactory
from tracking.services.refund import RefundInput, RefundInTestMode, refund_record

pytestmark = pytest.mark.django_db


def key_of(program, mode: str) -> ProgramKey:
    return ProgramKey.objects.select_related("program").get(program=program, mode=mode)


def unread() -> RefundInput:
    raise AssertionError("a test-mode refund is never read")


@pytest.mark.parametrize(
    ("mode", "additional_data"),
    [
        (ProgramKey.Mode.TEST, None),
        (ProgramKey.Mode.TEST, {"test_mode": False}),
        (ProgramKey.Mode.LIVE, {"test_mode": True}),
    ],
)
def test_in_test_mode_nothing_is_refunded(program, mode, additional_data):
    assert refund_record(key=key_of(program, mode), additional_data=additional_data, data=unread) == RefundInTestMode()


def test_a_live_refund_is_read_and_applied(program, customer):
    commission = CommissionFactory(sale=SaleFactory(customer=customer, processor_event_id="txn_live"))

    result = refund_record(
        key=key_of(program, ProgramKey.Mode.LIVE),
        additional_data={"test_mode": "true"},  # only exactly true is the flag
        data=lambda: {"transaction_id": "txn_live"},
    )

    assert isinstance(result, RefundOutcome) and result.commission_id == commission.pk
    assert Commission.objects.get().refund_count == 1
