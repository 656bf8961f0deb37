"""Paying and cancelling a withdrawal lock the same rows, so a race between them has exactly one winner."""

import pytest
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.models import LedgerEntry, Withdrawal
from commissions.services import withdrawal_cancel, withdrawal_mark_paid, withdrawal_request
from tests.factories import CommissionFactory
from tests.helpers import run_together


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("attempt", range(5))
def test_paying_and_cancelling_at_once_has_one_winner(attempt):
    commission = CommissionFactory(amount_cents=2000, hold_until=timezone.now())
    assert commission_approve(commission_id=commission.pk)
    withdrawal = withdrawal_request(partner=commission.partner, amount_cents=2000, currency="USD")
    services = [withdrawal_mark_paid, withdrawal_cancel]
    paid, cancelled = run_together(2, lambda n: services[n](withdrawal=Withdrawal.objects.get(pk=withdrawal.pk)))
    assert paid != cancelled
    withdrawal.refresh_from_db()
    payouts = LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).count()
    assert (withdrawal.status, payouts) == (("paid", 1) if paid else ("cancelled", 0))


@pytest.mark.django_db
def test_cancelling_leaves_a_cancelled_or_paid_withdrawal_as_it_is():
    commission = CommissionFactory(amount_cents=2000, hold_until=timezone.now())
    assert commission_approve(commission_id=commission.pk)
    withdrawal = withdrawal_request(partner=commission.partner, amount_cents=1000, currency="USD")
    assert withdrawal_cancel(withdrawal=withdrawal) is True
    assert withdrawal_cancel(withdrawal=withdrawal) is False
    assert withdrawal_mark_paid(withdrawal=withdrawal) is False
    withdrawal.refresh_from_db()
    assert withdrawal.status == "cancelled" and not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).exists()
