"""Rule holds under concurrency (PostgreSQL: real row locks): a release and a void racing on one held commission
end in one consistent state, and concurrent self-referred sales on a program without hold period never credit."""

import pytest
from rest_framework.test import APIClient

from commissions.models import Commission, CommissionReview, CommissionStatus, LedgerEntry
from commissions.services import CommissionActionRefused, commission_release, commission_void, partner_balance
from fraud.config import rule_update
from fraud.rules import Rule
from tests.helpers import run_together

from .flow import assert_ledger_consistent, click, click_id_of, commission_of, lead, referred_sale, sale

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def instant(program):
    """No hold period: only the rule's hold stands between a sale and the partner's credit."""
    program.hold_days = 0
    program.save()
    return program


def test_a_release_and_a_void_at_once_leave_one_outcome_and_a_consistent_ledger(instant, link, partner):
    commission = commission_of(referred_sale(APIClient(), link, email="pat@partnerco.com"))
    assert commission.hold_rule == Rule.SELF_REFERRAL

    def decide(n: int) -> str:
        try:
            if n == 0:
                commission_release(commission_id=commission.pk, actor="user:releaser")
                return "released"
            commission_void(commission_id=commission.pk, reason="race", actor="user:voider")
            return "voided"
        except CommissionActionRefused:
            return "refused"

    outcomes = run_together(2, decide)
    commission.refresh_from_db()
    # The void always ends it; the release either came first (credited, then taken back) or was refused.
    assert outcomes in (["released", "voided"], ["refused", "voided"])
    assert commission.status == CommissionStatus.REVERSED
    actions = list(commission.reviews.order_by("pk").values_list("action", flat=True))
    kinds = list(LedgerEntry.objects.filter(commission=commission).order_by("pk").values_list("kind", flat=True))
    if outcomes[0] == "released":
        assert actions == [
            CommissionReview.Action.HELD,
            CommissionReview.Action.RELEASED,
            CommissionReview.Action.VOIDED,
        ]
        assert kinds == [LedgerEntry.Kind.REVIEW, LedgerEntry.Kind.CREDIT, LedgerEntry.Kind.DEDUCTION]
    else:
        assert actions == [CommissionReview.Action.HELD, CommissionReview.Action.VOIDED]
        assert kinds == [LedgerEntry.Kind.REVIEW, LedgerEntry.Kind.REVIEW]
    assert partner_balance(partner_id=partner.pk, currency="USD") == 0
    assert_ledger_consistent(partner)


def test_two_releases_at_once_credit_once(instant, link, partner):
    commission = commission_of(referred_sale(APIClient(), link, email="pat@partnerco.com"))

    def release(n: int) -> bool:
        try:
            commission_release(commission_id=commission.pk, actor=f"user:owner{n}")
            return True
        except CommissionActionRefused:
            return False

    assert sorted(run_together(2, release)) == [False, True]
    assert LedgerEntry.objects.filter(commission=commission, kind=LedgerEntry.Kind.CREDIT).count() == 1
    assert partner_balance(partner_id=partner.pk, currency="USD") == 2000
    assert_ledger_consistent(partner)


def test_concurrent_self_referred_sales_never_credit(instant, link, partner):
    client = APIClient()
    buyers = []
    for n in range(4):
        click_id = click_id_of(click(client, link, ip=f"203.0.113.{n + 10}"))
        assert (
            lead(client, instant, click_id=click_id, customer_key=f"user_{n}", email="pat@partnerco.com").status_code
            == 200
        )
        buyers.append(f"user_{n}")

    def buy(n: int) -> int:
        # Two sales per customer, all at once.
        response = sale(APIClient(), instant, customer_key=buyers[n % 4], transaction_id=f"txn_{n}")
        return response.status_code

    assert run_together(8, buy) == [200] * 8
    commissions = Commission.objects.filter(partner=partner)
    assert commissions.count() == 8
    assert all(commission.held_at is not None and not commission.credited for commission in commissions)
    assert set(commissions.values_list("hold_rule", flat=True)) == {Rule.SELF_REFERRAL}
    assert not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.CREDIT).exists()
    assert CommissionReview.objects.filter(action=CommissionReview.Action.HELD, actor="rule").count() == 8
    assert partner_balance(partner_id=partner.pk, currency="USD") == 0
    assert_ledger_consistent(partner)


def test_concurrent_sales_over_the_velocity_threshold_are_all_held(program, link, partner):
    rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, enabled=True, threshold=2)
    click_id = click_id_of(click(APIClient(), link))
    first = commission_of(sale(APIClient(), program, click_id=click_id, transaction_id="first"))

    def buy(n: int) -> int:
        return sale(APIClient(), program, click_id=click_id, transaction_id=f"txn_{n}").status_code

    assert run_together(6, buy) == [200] * 6
    # Each sale is stored before it is judged, so at most one of the six (the first stored) can see only itself
    # and the first sale: at least five are held, as many as one after the other.
    held = Commission.objects.filter(hold_rule=Rule.SALE_VELOCITY)
    assert held.count() >= 5
    assert not held.filter(pk=first.pk).exists()
    assert_ledger_consistent(partner)
