"""Milestone bonuses: paid once per partner and period as a bonus commission through the usual hold, approval and
ledger, and clawed back whole, exactly once, when a refund takes the figure below the threshold."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission, LedgerEntry
from commissions.services import commission_void, partner_balance
from groups.models import BonusAward
from groups.services import Move, partner_move
from tests.factories import CustomerFactory
from tests.helpers import run_together
from tiers.milestones import bonuses_award, bonuses_award_all
from tracking.rollups import rollups_update
from webhooks.models import WebhookEvent

from .world import another_link, bonus, bonus_commissions, enrolment, group, program_link, refund, sale

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 20, 12, tzinfo=UTC)
DAY = datetime(2026, 12, 5, 12, tzinfo=UTC)


def sales(link, count: int, **fields):
    return [sale(link, when=DAY + timedelta(minutes=n), **fields) for n in range(count)]


def events_of(commission: Commission) -> list[str]:
    return list(
        WebhookEvent.objects.filter(object_id=commission.pk, type__startswith="commission.")
        .values_list("type", flat=True)
        .order_by("pk")
    )


def test_a_partner_reaching_the_threshold_is_paid_the_bonus_once_as_a_pending_commission():
    program, link = program_link(hold_days=14)
    launch = bonus(program, threshold=3, amount_cents=5000, currency="EUR")
    sales(link, 2)
    assert bonuses_award(program, NOW).awarded == 0
    sale(link, when=DAY)
    assert bonuses_award(program, NOW).awarded == 1
    assert bonuses_award(program, NOW).awarded == 0  # the next run finds it paid
    assert bonuses_award_all(NOW).awarded == 0

    (commission,) = bonus_commissions(link)
    assert (commission.kind, commission.sale_id, commission.customer_id, commission.group_id) == (
        "bonus",
        None,
        None,
        None,
    )
    assert (commission.amount_cents, commission.currency, commission.status) == (5000, "EUR", "pending")
    assert (commission.hold_until, commission.credited) == (NOW + timedelta(days=14), False)
    award = BonusAward.objects.get()
    assert (award.bonus, award.partner_id, award.period_key, award.figure) == (launch, link.partner_id, "2026-12", 3)
    assert award.commission == commission
    assert events_of(commission) == ["commission.created"]
    data = WebhookEvent.objects.get(object_id=commission.pk).data
    assert (data["sale_id"], data["kind"], data["bonus"]) == (None, "bonus", {"id": launch.pk, "name": "Launch"})

    # The hold-end job approves and credits it as any commission.
    assert commissions_approve_due(now=NOW + timedelta(days=14)) == 1
    commission.refresh_from_db()
    assert (commission.status, commission.credited) == ("approved", True)
    assert partner_balance(partner_id=link.partner_id, currency="EUR") == 5000
    assert events_of(commission) == ["commission.created", "commission.approved"]


def test_with_no_hold_the_bonus_is_approved_and_credited_at_once():
    program, link = program_link(hold_days=0)
    bonus(program, threshold=1, amount_cents=700)
    sale(link, when=DAY)
    assert bonuses_award(program, NOW).awarded == 1
    (commission,) = bonus_commissions(link)
    assert (commission.status, commission.credited, commission.approved_at) == ("approved", True, NOW)
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 700
    assert events_of(commission) == ["commission.created", "commission.approved"]


def test_a_group_s_bonus_pays_its_partners_only_under_the_group_s_hold():
    program, link = program_link(hold_days=30)
    other = another_link(program)
    gold = group(program, "Gold", hold_days=3)
    partner_move(enrolment=enrolment(other), group=gold, move=Move(reason="owner"))
    bonus(program, group=gold, threshold=2)
    sales(link, 2)
    sales(other, 2)
    assert bonuses_award(program, NOW).awarded == 1
    assert bonus_commissions(link) == []
    (commission,) = bonus_commissions(other)
    assert (commission.group, commission.hold_until) == (gold, NOW + timedelta(days=3))


def test_inactive_partners_inactive_bonuses_and_other_periods_are_not_paid():
    program, link = program_link()
    other = another_link(program)
    sales(link, 3)
    sales(
        other,
        3,
    )
    other.partner.is_active = False
    other.partner.save()
    off = bonus(program, name="Off", threshold=1, is_active=False)
    bonus(program, name="Next quarter", threshold=1, period="quarter")
    assert bonuses_award(program, datetime(2027, 1, 2, tzinfo=UTC)).awarded == 0  # the sales are last quarter's
    assert bonuses_award(program, NOW).awarded == 1  # this quarter's, to the active partner
    assert not BonusAward.objects.filter(bonus=off).exists()


def test_a_monthly_bonus_is_paid_again_the_next_month_a_lifetime_one_never():
    program, link = program_link()
    bonus(program, name="Monthly", threshold=1, period="month")
    bonus(program, name="Lifetime", threshold=1, period="lifetime")
    sale(link, when=DAY)
    assert bonuses_award(program, NOW).awarded == 2
    january = datetime(2027, 1, 10, tzinfo=UTC)
    sale(link, when=january)
    assert bonuses_award(program, january).awarded == 1
    assert sorted(BonusAward.objects.values_list("bonus__name", "period_key")) == [
        ("Lifetime", "all"),
        ("Monthly", "2026-12"),
        ("Monthly", "2027-01"),
    ]


def test_a_revenue_bonus_counts_revenue_net_of_refunds():
    program, link = program_link()
    bonus(program, metric="revenue", threshold=25000)
    first, _ = sales(link, 2, amount=15000)
    refund(first, 6000)  # 24,000 left
    assert bonuses_award(program, NOW).awarded == 0
    rollups_update(settle=timedelta(0))
    sale(link, when=DAY, amount=1000)
    assert bonuses_award(program, NOW).awarded == 1
    assert BonusAward.objects.get().figure == 25000


# --- Clawback -----------------------------------------------------------------------------------------------------


def test_a_refund_below_the_threshold_reverses_a_pending_bonus_whole_and_the_award_stays():
    program, link = program_link()
    bonus(program, threshold=3)
    first, second, _third, _fourth = sales(link, 4)
    bonuses_award(program, NOW)
    refund(first)  # 3 left: still reached
    (commission,) = bonus_commissions(link)
    assert commission.status == "pending"
    refund(second, 4000)  # a part: the sale still counts
    commission.refresh_from_db()
    assert commission.status == "pending"
    refund(second)  # the rest: 2 sales left
    commission.refresh_from_db()
    assert (commission.status, commission.deducted_cents, commission.credited) == ("reversed", 0, False)
    assert "below the bonus's threshold (2 of 3)" in commission.refund_reason
    assert events_of(commission) == ["commission.created", "commission.reversed"]
    assert list(LedgerEntry.objects.filter(commission=commission).values_list("kind", "amount_cents")) == [
        ("review", 0)
    ]
    # Never paid again for the period, even when the figure is reached again; the hold-end job leaves it.
    sales(link, 2)
    assert bonuses_award(program, NOW).awarded == 0
    assert BonusAward.objects.get().commission == commission
    assert commissions_approve_due(now=NOW + timedelta(days=60)) == 0
    commission.refresh_from_db()
    assert commission.status == "reversed"


def test_a_credited_bonus_is_deducted_from_the_ledger_once(django_capture_on_commit_callbacks):
    program, link = program_link(hold_days=0)
    bonus(program, threshold=2, amount_cents=5000)
    first, second = sales(link, 2)
    bonuses_award(program, NOW)
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 5000
    with django_capture_on_commit_callbacks(execute=True):
        refund(first)
    (commission,) = bonus_commissions(link)
    assert (commission.status, commission.deducted_cents) == ("reversed", 5000)
    deductions = LedgerEntry.objects.filter(commission=commission, kind="deduction")
    assert list(deductions.values_list("amount_cents", flat=True)) == [-5000]
    refund(second)  # the figure falls further: nothing more to take back
    assert deductions.count() == 1
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 0
    assert events_of(commission) == ["commission.created", "commission.approved", "commission.reversed"]


def test_a_bonus_an_owner_voided_is_not_clawed_back_again():
    program, link = program_link(hold_days=0)
    bonus(program, threshold=1)
    (event,) = sales(link, 1)
    bonuses_award(program, NOW)
    (commission,) = bonus_commissions(link)
    commission_void(commission_id=commission.pk, reason="not earned", actor="user:owner")
    refund(event)
    assert LedgerEntry.objects.filter(commission=commission, kind="deduction").count() == 1
    commission.refresh_from_db()
    assert commission.deducted_cents == 5000


def test_a_refund_of_another_period_s_sale_leaves_this_period_s_bonus():
    program, link = program_link()
    bonus(program, threshold=1)
    november = sale(link, when=datetime(2026, 11, 20, tzinfo=UTC))
    sale(link, when=DAY)
    bonuses_award(program, NOW)
    refund(november)
    (commission,) = bonus_commissions(link)
    assert commission.status == "pending"


def test_a_refund_in_a_program_without_bonuses_reads_no_award():
    _, link = program_link()
    (event,) = sales(link, 1)
    assert refund(event).status == "reversed"


# --- Concurrency (PostgreSQL) --------------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_pay_a_bonus_at_most_once():
    program, link = program_link(hold_days=0)
    bonus(program, threshold=3)
    sales(link, 3)
    results = run_together(6, lambda n: bonuses_award(program, NOW).awarded)
    assert sum(results) == 1
    assert len(bonus_commissions(link)) == 1
    assert BonusAward.objects.count() == 1
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 5000
    assert LedgerEntry.objects.filter(commission__kind="bonus", kind="credit").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_runs_during_concurrent_sales_pay_exactly_once():
    from rest_framework.test import APIClient

    program, link = program_link()
    bonus(program, threshold=3, period="lifetime")
    customers = [CustomerFactory(link=link) for _ in range(6)]

    def work(n: int) -> int:
        if n < 6:
            response = APIClient().post(
                "/api/v1/track/sale",
                {"transaction_id": f"txn_{n}", "amount_cents": 1000, "click_id": customers[n].click_id},
                format="json",
                HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}",
            )
            assert response.status_code == 200, response.content
            return 0
        return sum(bonuses_award(program, timezone.now()).awarded for _ in range(3))

    paid = sum(run_together(9, work))
    paid += bonuses_award(program, timezone.now()).awarded
    assert paid == 1
    assert len(bonus_commissions(link)) == 1
    assert BonusAward.objects.get().figure >= 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_refunds_claw_a_bonus_back_exactly_once():
    program, link = program_link(hold_days=0)
    bonus(program, threshold=3, amount_cents=5000)
    events = sales(link, 5)
    bonuses_award(program, NOW)
    # Each refund alone leaves 4 sales; together they leave 2: only seeing each other do they claw back.
    run_together(3, lambda n: refund(events[n]).status)
    (commission,) = bonus_commissions(link)
    assert (commission.status, commission.deducted_cents) == ("reversed", 5000)
    assert list(
        LedgerEntry.objects.filter(commission=commission, kind="deduction").values_list("amount_cents", flat=True)
    ) == [-5000]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_and_a_refund_at_once_never_leave_a_bonus_the_figure_does_not_reach():
    for attempt in range(4):
        program, link = program_link(hold_days=0)
        bonus(program, threshold=3)
        events = sales(link, 3)

        def work(n: int, events=events, program=program) -> None:
            if n == 0:
                refund(events[0])
            else:
                bonuses_award(program, NOW)

        run_together(3, work)
        commissions = bonus_commissions(link)
        # Paid and clawed back (the award came first), or never paid (the refund came first).
        assert [c.status for c in commissions] in ([], ["reversed"]), attempt
        assert partner_balance(partner_id=link.partner_id, currency="USD") == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_refund_committing_while_a_run_decides_waits_for_it_and_claws_back(monkeypatch):
    """The run has read the figure (the threshold reached) and not yet inserted the award when a refund takes the
    figure below it: the refund waits for the enrolment the run holds, then finds the award and reverses it."""
    import threading

    from tests.helpers import wait_for_lock_waiters
    from tiers import milestones

    program, link = program_link(hold_days=0)
    bonus(program, threshold=3)
    events = sales(link, 3)
    figure_read, refunded = threading.Event(), threading.Event()
    read = milestones.partner_figure

    def figure_then_wait(**kwargs):
        figure = read(**kwargs)
        if threading.current_thread().name == "run":
            figure_read.set()
            wait_for_lock_waiters(1, or_until=refunded.is_set)
        return figure

    monkeypatch.setattr(milestones, "partner_figure", figure_then_wait)

    def work(n: int) -> None:
        if n == 0:
            threading.current_thread().name = "run"
            bonuses_award(program, NOW)
        else:
            assert figure_read.wait(timeout=30)
            refund(events[0])
            refunded.set()

    run_together(2, work)
    (commission,) = bonus_commissions(link)
    assert (commission.status, commission.deducted_cents) == ("reversed", 5000)
    assert partner_balance(partner_id=link.partner_id, currency="USD") == 0
