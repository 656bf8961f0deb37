"""The refund's test-mode rule is the refund service's (tracking.services.refund), so every caller gets it: the
test key, or additional_data.test_mode with any key, refunds nothing, whatever the refund names."""

import pytest

from commissions.models import Commission
from commissions.services import RefundOutcome
from programs.models import ProgramKey
from tests.factories import CommissionFactory, SaleFactory
from tracking.services.refund import RefundInTestMode, refund_record, refund_test_mode

pytestmark = pytest.mark.django_db


def key_of(program, mode: str) -> ProgramKey:
    return ProgramKey.objects.select_related("program").get(program=program, mode=mode)


@pytest.mark.parametrize(
    ("mode", "additional_data"),
    [
        (ProgramKey.Mode.TEST, None),
        (ProgramKey.Mode.TEST, {"test_mode": False}),
        (ProgramKey.Mode.LIVE, {"test_mode": True}),
    ],
)
def test_in_test_mode_nothing_is_refunded(program, customer, mode, additional_data):
    CommissionFactory(sale=SaleFactory(customer=customer, processor_event_id="txn_live"))
    key = key_of(program, mode)

    assert refund_test_mode(key=key, additional_data=additional_data) == RefundInTestMode()
    refunded = refund_record(data={"transaction_id": "txn_live"}, key=key, additional_data=additional_data)

    assert refunded == RefundInTestMode()
    assert Commission.objects.get().refund_count == 0


def test_a_live_refund_is_applied(program, customer):
    commission = CommissionFactory(sale=SaleFactory(customer=customer, processor_event_id="txn_live"))
    key = key_of(program, ProgramKey.Mode.LIVE)
    additional_data = {"test_mode": "true"}  # only exactly true is the flag

    assert refund_test_mode(key=key, additional_data=additional_data) is None
    result = refund_record(data={"transaction_id": "txn_live"}, key=key, additional_data=additional_data)

    assert isinstance(result, RefundOutcome) and result.commission_id == commission.pk
    assert Commission.objects.get().refund_count == 1
