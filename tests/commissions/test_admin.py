"""The commission and withdrawal admin: rows are read-only, and paying or cancelling a withdrawal goes through the
services, so the operator cannot move money without its ledger entry."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.models import Commission, LedgerEntry, Withdrawal
from commissions.services import withdrawal_request
from tests.factories import CommissionFactory, PartnerFactory

pytestmark = pytest.mark.django_db

WITHDRAWALS = "/admin/commissions/withdrawal/"


@pytest.fixture
def operator(client):
    client.force_login(get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123"))
    return client


@pytest.fixture
def partner():
    return PartnerFactory()


def credited(partner, amount_cents: int) -> Commission:
    commission = CommissionFactory.create(partner=partner, amount_cents=amount_cents, hold_until=timezone.now())
    assert commission_approve(commission_id=commission.pk)
    return commission


def run_action(client, action: str, *withdrawals: Withdrawal):
    return client.post(WITHDRAWALS, {"action": action, "_selected_action": [w.pk for w in withdrawals]})


def shown(response) -> list[str]:
    """Messages not shown yet: the action redirects without rendering, so earlier ones are still queued."""
    return [str(message) for message in get_messages(response.wsgi_request)]


class TestMarkPaid:
    def test_writes_the_payout_entry_and_marks_the_covered_commissions_paid(self, operator, partner):
        older, newer = credited(partner, 2000), credited(partner, 3000)
        withdrawal = withdrawal_request(partner=partner, amount_cents=2500, currency="USD")
        response = run_action(operator, "mark_paid", withdrawal)
        assert response.status_code == 302 and shown(response) == ["Marked 1 withdrawal(s) paid."]
        withdrawal.refresh_from_db()
        assert withdrawal.status == "paid"
        payout = LedgerEntry.objects.get(kind=LedgerEntry.Kind.PAYOUT)
        assert (payout.partner_id, payout.amount_cents, payout.currency) == (partner.pk, -2500, "USD")
        # The payout covers the older commission whole, the newer one only in part.
        statuses = dict(Commission.objects.values_list("pk", "status"))
        assert statuses == {older.pk: "paid", newer.pk: "approved"}

    def test_a_withdrawal_no_longer_open_is_skipped_and_paid_only_once(self, operator, partner):
        credited(partner, 2000)
        withdrawal = withdrawal_request(partner=partner, amount_cents=2000, currency="USD")
        run_action(operator, "mark_paid", withdrawal)
        again = run_action(operator, "mark_paid", withdrawal)
        assert shown(again)[-1] == "Marked 0 withdrawal(s) paid; 1 skipped (no longer open)."
        assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).count() == 1


class TestCancel:
    def test_cancels_an_open_withdrawal_without_touching_the_ledger(self, operator, partner):
        credited(partner, 2000)
        withdrawal = withdrawal_request(partner=partner, amount_cents=1500, currency="USD")
        entries = LedgerEntry.objects.count()
        response = run_action(operator, "cancel", withdrawal)
        assert shown(response) == ["Cancelled 1 withdrawal(s)."]
        withdrawal.refresh_from_db()
        assert withdrawal.status == "cancelled" and LedgerEntry.objects.count() == entries

    def test_a_paid_withdrawal_cannot_be_cancelled(self, operator, partner):
        credited(partner, 2000)
        withdrawal = withdrawal_request(partner=partner, amount_cents=2000, currency="USD")
        run_action(operator, "mark_paid", withdrawal)
        response = run_action(operator, "cancel", withdrawal)
        assert shown(response)[-1] == "Cancelled 0 withdrawal(s); 1 skipped (no longer open)."
        withdrawal.refresh_from_db()
        assert withdrawal.status == "paid"


class TestNoDirectEdits:
    def test_the_status_field_cannot_be_edited(self, operator, partner):
        credited(partner, 2000)
        withdrawal = withdrawal_request(partner=partner, amount_cents=2000, currency="USD")
        url = f"{WITHDRAWALS}{withdrawal.pk}/change/"
        page = operator.get(url).content.decode()
        assert 'name="status"' not in page and 'name="amount_cents"' not in page
        operator.post(url, {"status": "paid", "amount_cents": 1, "partner": partner.pk, "_save": "Save"})
        withdrawal.refresh_from_db()
        assert (withdrawal.status, withdrawal.amount_cents) == ("open", 2000)
        assert not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.PAYOUT).exists()

    def test_withdrawals_are_neither_added_nor_deleted_here(self, operator, partner):
        credited(partner, 2000)
        withdrawal = withdrawal_request(partner=partner, amount_cents=2000, currency="USD")
        assert operator.get(f"{WITHDRAWALS}add/").status_code == 403
        assert operator.get(f"{WITHDRAWALS}{withdrawal.pk}/delete/").status_code == 403

    def test_commission_money_and_status_cannot_be_edited_or_deleted(self, operator, partner):
        commission = CommissionFactory(partner=partner, amount_cents=2000)
        url = f"/admin/commissions/commission/{commission.pk}/change/"
        page = operator.get(url).content.decode()
        assert not any(f'name="{field}"' in page for field in ("amount_cents", "status", "credited", "currency"))
        operator.post(url, {"status": "approved", "credited": "on", "amount_cents": 1, "_save": "Save"})
        commission.refresh_from_db()
        assert (commission.status, commission.credited, commission.amount_cents) == ("pending", False, 2000)
        assert operator.get(f"/admin/commissions/commission/{commission.pk}/delete/").status_code == 403


COMMISSIONS = "/admin/commissions/commission/"


def test_commission_actions_go_through_the_owner_services(operator, partner):
    pending = CommissionFactory.create(partner=partner, amount_cents=700, hold_until=timezone.now() + timedelta(days=9))
    approved = credited(partner, 500)

    def act(action: str, *commissions: Commission):
        return operator.post(COMMISSIONS, {"action": action, "_selected_action": [c.pk for c in commissions]})

    response = act("hold", pending, approved)
    assert shown(response) == [f"Held 1 commission(s); refused for #{approved.pk} (their status does not allow it)."]
    pending.refresh_from_db()
    assert pending.held_at is not None and pending.hold_reason == "Held in admin by operator"
    act("release", pending)
    act("approve_now", pending)
    pending.refresh_from_db()
    assert pending.status == "approved"
    act("void", approved)
    approved.refresh_from_db()
    assert (approved.status, approved.void_reason) == ("reversed", "Voided in admin by operator")
    ledger = LedgerEntry.objects.filter(partner=partner).values_list("kind", "amount_cents")
    # The hold and the release within its period moved no money: records of no amount.
    assert sorted(ledger) == [("credit", 500), ("credit", 700), ("deduction", -500), ("review", 0), ("review", 0)]
    assert list(pending.reviews.values_list("action", "actor")) == [
        ("held", "admin:operator"),
        ("released", "admin:operator"),
    ]
    # Each action is in the admin's own history of the commission too.
    history = LogEntry.objects.filter(object_id=str(pending.pk)).order_by("pk").values_list("change_message", flat=True)
    assert list(history) == ["Held", "Released", "Approved"]
