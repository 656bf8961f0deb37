"""'A pending commission partly refunded is cancelled', named once (commissions.selectors.cancelled_by_refund)
and read by what the commission still pays."""

import pytest

from commissions.approval import commission_approve
from commissions.models import Commission
from commissions.selectors import cancelled_by_refund, commissions_with_money
from commissions.services import refund_apply
from tests.factories import CommissionFactory

pytestmark = pytest.mark.django_db


def test_a_partly_refunded_pending_commission_is_cancelled_and_pays_nothing():
    commission = CommissionFactory(sale__amount_cents=10_000)
    refund_apply(sale=commission.sale, amount=2_500, refund_id="re_1", reason="")

    assert list(Commission.objects.filter(cancelled_by_refund())) == [commission]
    row = commissions_with_money().get(pk=commission.pk)
    assert (row.payable_cents, row.clawed_back_cents) == (0, 0)


def test_a_partly_refunded_credited_commission_is_not_cancelled_and_pays_the_rest():
    commission = CommissionFactory(sale__amount_cents=10_000)
    assert commission_approve(commission_id=commission.pk)
    refund_apply(sale=commission.sale, amount=2_500, refund_id="re_1", reason="")

    assert not Commission.objects.filter(cancelled_by_refund()).exists()
    row = commissions_with_money().get(pk=commission.pk)
    assert row.clawed_back_cents == row.deducted_cents > 0
    assert row.payable_cents == row.amount_cents - row.deducted_cents


def test_it_reaches_the_commission_through_a_relation():
    commission = CommissionFactory(sale__amount_cents=10_000)
    refund_apply(sale=commission.sale, amount=2_500, refund_id="re_1", reason="")
    sale_model = type(commission.sale)
    assert list(sale_model.objects.filter(cancelled_by_refund("commission__"))) == [commission.sale]
