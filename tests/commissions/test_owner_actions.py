"""Owner actions on a commission: hold and release, approve early, void. Each keeps the ledger and what the
commission pays in step."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from commissions.approval import CommissionNotApprovable, commission_approve_early, commissions_approve_due
from commissions.models import Commission, CommissionReview, CommissionStatus, LedgerEntry, Withdrawal
from commissions.selectors import commissions_with_money
from commissions.services import (
    CommissionActionRefused,
    commission_hold,
    commission_release,
    commission_void,
    partner_balance,
    refund_apply,
    withdrawal_mark_paid,
    withdrawal_request,
)
from tests.factories import CommissionFactory, credited_commission
from tests.helpers import run_together

pytestmark = pytest.mark.django_db


def balance(commission: Commission) -> int:
    return partner_balance(partner_id=commission.partner_id, currency=commission.currency)


def payable(commission: Commission) -> int:
    return commissions_with_money().get(pk=commission.pk).payable_cents


class TestHold:
    def test_a_held_commission_is_not_approved_when_its_hold_ends_until_released(self):
        commission = CommissionFactory.create(hold_until=timezone.now() - timedelta(days=1))
        commission_hold(commission_id=commission.pk, reason="checking the order", actor="test")
        assert commissions_approve_due() == 0
        commission.refresh_from_db()
        assert commission.status == CommissionStatus.PENDING and commission.hold_reason == "checking the order"
        # Its hold period is over: the release approves and credits it at once, in the same transaction.
        released = commission_release(commission_id=commission.pk, actor="user:owner")
        assert (released.status, released.credited) == (CommissionStatus.APPROVED, True)
        assert commissions_approve_due() == 0
        assert balance(commission) == commission.amount_cents
        assert list(LedgerEntry.objects.filter(commission=commission).values_list("kind", "amount_cents", "memo")) == [
            ("review", 0, f"Commission #{commission.pk} held: checking the order"),
            ("credit", commission.amount_cents, f"Commission #{commission.pk} released from hold; approved"),
        ]
        assert list(CommissionReview.objects.filter(commission=commission).values_list("action", "actor")) == [
            ("held", "test"),
            ("released", "user:owner"),
        ]

    def test_a_release_within_the_hold_period_leaves_it_to_the_approval_run(self):
        commission = CommissionFactory.create(hold_until=timezone.now() + timedelta(days=1))
        commission_hold(commission_id=commission.pk, reason="checking", actor="test")
        released = commission_release(commission_id=commission.pk, reason="looks fine", actor="test")
        assert (released.status, released.held_at) == (CommissionStatus.PENDING, None)
        assert balance(commission) == 0
        assert list(LedgerEntry.objects.filter(commission=commission).values_list("kind", "amount_cents", "memo")) == [
            ("review", 0, f"Commission #{commission.pk} held: checking"),
            (
                "review",
                0,
                f"Commission #{commission.pk} released from hold: looks fine; credited when its hold period ends",
            ),
        ]
        with time_machine.travel(timezone.now() + timedelta(days=2)):
            assert commissions_approve_due() == 1
        assert balance(commission) == commission.amount_cents

    def test_held_commissions_do_not_stop_the_approval_run(self):
        due = timezone.now() - timedelta(days=1)
        held = [CommissionFactory.create(hold_until=due - timedelta(hours=1)) for _ in range(3)]
        for commission in held:
            commission_hold(commission_id=commission.pk, actor="test")
        approvable = CommissionFactory.create(hold_until=due)
        assert commissions_approve_due(batch_size=2) == 1
        approvable.refresh_from_db()
        assert approvable.status == CommissionStatus.APPROVED

    def test_only_a_pending_commission_can_be_held(self):
        commission = credited_commission()
        with pytest.raises(CommissionActionRefused, match="this one is approved"):
            commission_hold(commission_id=commission.pk, actor="test")

    def test_releasing_a_commission_not_on_hold_is_refused(self):
        with pytest.raises(CommissionActionRefused):
            commission_release(commission_id=CommissionFactory.create().pk, actor="test")


class TestApproveEarly:
    def test_it_approves_before_the_hold_ends_and_credits_the_partner(self):
        commission = CommissionFactory.create(hold_until=timezone.now() + timedelta(days=30))
        approved = commission_approve_early(commission_id=commission.pk)
        assert (approved.status, approved.credited) == (CommissionStatus.APPROVED, True)
        assert balance(commission) == commission.amount_cents
        assert commissions_approve_due() == 0  # not credited twice

    def test_a_held_or_approved_commission_is_refused(self):
        held = CommissionFactory.create(hold_until=timezone.now() + timedelta(days=30))
        commission_hold(commission_id=held.pk, actor="test")
        with pytest.raises(CommissionNotApprovable):
            commission_approve_early(commission_id=held.pk)
        with pytest.raises(CommissionNotApprovable):
            commission_approve_early(commission_id=credited_commission().pk)
        # Only the hold's record, of no amount: nothing credited.
        assert list(LedgerEntry.objects.filter(commission=held).values_list("kind", "amount_cents")) == [("review", 0)]


class TestVoid:
    def test_a_pending_commission_is_reversed_with_a_ledger_record_of_no_amount(self):
        commission = CommissionFactory.create(hold_until=timezone.now() + timedelta(days=30))
        voided = commission_void(commission_id=commission.pk, reason="fraud", actor="test")
        assert (voided.status, voided.void_reason) == (CommissionStatus.REVERSED, "fraud")
        assert payable(commission) == 0 and balance(commission) == 0
        assert list(LedgerEntry.objects.values_list("kind", "amount_cents", "memo")) == [
            ("review", 0, f"Commission #{commission.pk} voided: fraud")
        ]
        review = CommissionReview.objects.get(commission=commission)
        assert (review.action, review.reason, review.actor) == ("voided", "fraud", "test")

    def test_an_approved_commission_gives_back_its_credit(self):
        commission = credited_commission(commission=2000)
        commission_void(commission_id=commission.pk, reason="fraud", actor="test")
        assert balance(commission) == 0 and payable(commission) == 0
        deduction = LedgerEntry.objects.get(kind=LedgerEntry.Kind.DEDUCTION)
        assert deduction.amount_cents == -2000 and "voided: fraud" in deduction.memo

    def test_a_partly_refunded_credited_commission_gives_back_only_the_rest(self):
        commission = credited_commission(amount=10000, commission=2000)
        refund_apply(sale=commission.sale, amount=2500, refund_id="re_1", reason="")
        assert balance(commission) == 1500
        commission_void(commission_id=commission.pk, reason="", actor="test")
        assert balance(commission) == 0 and payable(commission) == 0

    def test_a_later_refund_of_a_voided_commission_takes_nothing_more(self):
        commission = credited_commission()
        commission_void(commission_id=commission.pk, reason="", actor="test")
        outcome = refund_apply(sale=commission.sale, amount=None, refund_id=None, reason="")
        assert outcome.status == "skipped" and balance(commission) == 0

    def test_paid_and_reversed_commissions_are_refused(self):
        commission = credited_commission()
        commission_void(commission_id=commission.pk, reason="", actor="test")
        with pytest.raises(CommissionActionRefused, match="already reversed"):
            commission_void(commission_id=commission.pk, reason="", actor="test")
        paid = credited_commission()
        paid.status = CommissionStatus.PAID
        paid.save()
        with pytest.raises(CommissionActionRefused, match="refund its sale"):
            commission_void(commission_id=paid.pk, reason="", actor="test")

    def test_an_open_withdrawal_shrinks_to_the_new_balance(self):
        commission = credited_commission(commission=2000)
        withdrawal = withdrawal_request(partner=commission.partner, amount_cents=2000, currency="USD")
        commission_void(commission_id=commission.pk, reason="", actor="test")
        withdrawal.refresh_from_db()
        assert withdrawal.status == Withdrawal.Status.CANCELLED
        assert not withdrawal_mark_paid(withdrawal=withdrawal)
        assert balance(commission) == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_void_and_a_full_refund_at_once_take_the_credit_back_once():
    commission = credited_commission(commission=2000)

    def act(n: int) -> None:
        if n == 0:
            try:
                commission_void(commission_id=commission.pk, reason="", actor="test")
            except CommissionActionRefused:
                pass
        else:
            refund_apply(sale=commission.sale, amount=None, refund_id=None, reason="")

    run_together(2, act)
    assert balance(commission) == 0
    assert payable(commission) == 0


def test_a_void_of_a_held_commission_only_is_refused_once_released():
    commission = CommissionFactory.create(hold_until=timezone.now() - timedelta(days=1))
    commission_hold(commission_id=commission.pk, actor="test")
    commission_release(commission_id=commission.pk, actor="user:colleague")
    with pytest.raises(CommissionActionRefused, match="not on hold"):
        commission_void(commission_id=commission.pk, reason="too late", actor="user:owner", only_held=True)
    assert balance(commission) == commission.amount_cents


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_release_and_a_void_of_the_hold_at_once_end_one_way():
    commission = CommissionFactory.create(hold_until=timezone.now() - timedelta(days=1))
    commission_hold(commission_id=commission.pk, actor="test")

    def act(n: int) -> str:
        try:
            if n == 0:
                commission_release(commission_id=commission.pk, actor="user:a")
            else:
                commission_void(commission_id=commission.pk, reason="no", actor="user:b", only_held=True)
        except CommissionActionRefused:
            return "refused"
        return "done"

    assert sorted(run_together(2, act)) == ["done", "refused"]
    commission.refresh_from_db()
    # Released and credited, or voided and never credited: never credited and then taken back.
    expected = commission.amount_cents if commission.status == CommissionStatus.APPROVED else 0
    assert commission.status in (CommissionStatus.APPROVED, CommissionStatus.REVERSED)
    assert balance(commission) == expected
    assert not LedgerEntry.objects.filter(commission=commission, kind=LedgerEntry.Kind.DEDUCTION).exists()
