from datetime import timedelta
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from commissions.approval import commission_approve, commissions_approve_due
from commissions.models import Commission, LedgerEntry
from commissions.services import partner_balance
from commissions.tasks import commissions_approve_due_task
from config.settings import CELERY_BEAT_SCHEDULE
from tests.factories import CommissionFactory

pytestmark = pytest.mark.django_db


def pending(days: int = 30) -> Commission:
    return CommissionFactory.create(hold_until=timezone.now() + timedelta(days=days))


def test_nothing_is_approved_during_the_hold():
    commission = pending()
    assert commissions_approve_due() == 0
    commission.refresh_from_db()
    assert commission.status == "pending" and not commission.credited
    assert not LedgerEntry.objects.exists()


def test_when_the_hold_ends_it_is_approved_and_credited_together():
    commission = pending(days=30)
    with time_machine.travel(timezone.now() + timedelta(days=30, seconds=1)):
        assert commissions_approve_due() == 1
    commission.refresh_from_db()
    assert commission.status == "approved" and commission.credited and commission.approved_at
    [entry] = LedgerEntry.objects.filter(commission=commission)
    assert (entry.kind, entry.amount_cents) == ("credit", commission.amount_cents)
    assert partner_balance(partner_id=commission.partner_id, currency="USD") == commission.amount_cents


def test_a_commission_is_credited_once_however_often_the_job_runs():
    commission = pending(days=0)
    assert commissions_approve_due() == 1
    assert commissions_approve_due() == 0
    assert not commission_approve(commission_id=commission.pk)
    assert LedgerEntry.objects.filter(commission=commission).count() == 1


def test_refunded_or_reversed_commissions_are_never_approved():
    refunded, reversed_ = pending(days=0), pending(days=0)
    Commission.objects.filter(pk=refunded.pk).update(status="refunded")
    Commission.objects.filter(pk=reversed_.pk).update(status="reversed")
    assert commissions_approve_due() == 0
    assert not LedgerEntry.objects.exists()


def test_it_works_in_batches():
    for _ in range(5):
        pending(days=0)
    assert commissions_approve_due(batch_size=2) == 5


def test_the_management_command_and_the_beat_task():
    pending(days=0)
    out = StringIO()
    call_command("approve_commissions", stdout=out)
    assert "Approved 1 commission(s)." in out.getvalue()
    pending(days=0)
    assert commissions_approve_due_task.delay().get() == 1
    assert CELERY_BEAT_SCHEDULE["approve-due-commissions"]["task"] == commissions_approve_due_task.name
