"""Payout runs under concurrency on PostgreSQL: runs confirmed together, refunds racing a run. Each test ends with
every partner's ledger exact and no partner paid twice."""

import pytest
from django.db import connection

from commissions.services import refund_apply
from payouts.models import Payout, PayoutStatus
from payouts.services import RunAlreadyConfirmed, run_confirm, run_preview
from tests.factories import ProgramFactory
from tests.helpers import run_together

from .money import balance, credited, ledger_exact, payable_partner

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL"),
]

PARTNERS = 12


def test_two_runs_confirmed_at_once_pay_each_partner_once():
    program = ProgramFactory()
    partners = [payable_partner(program, name=f"P{n:02}") for n in range(PARTNERS)]
    for n, partner in enumerate(partners):
        credited(partner, program, amount=10_000 + n * 100)
    runs = [run_preview(program=program, currency="USD", actor=f"user:{n}") for n in range(4)]

    made = run_together(len(runs), lambda n: len(run_confirm(run_id=runs[n].pk, actor=f"user:{n}")))

    assert sum(made) == PARTNERS
    for n, partner in enumerate(partners):
        [payout] = Payout.objects.filter(partner=partner)
        assert payout.amount_cents == 2_000 + n * 20
        assert balance(partner) == 0
        ledger_exact(partner)


def test_the_same_run_confirmed_twice_at_once_pays_once():
    program = ProgramFactory()
    partners = [payable_partner(program) for _ in range(5)]
    for partner in partners:
        credited(partner, program, amount=10_000)
    run = run_preview(program=program, currency="USD", actor="a")

    def confirm(n: int) -> str:
        try:
            return f"made {len(run_confirm(run_id=run.pk, actor=f'user:{n}'))}"
        except RunAlreadyConfirmed:
            return "refused"

    assert sorted(run_together(3, confirm)) == ["made 5", "refused", "refused"]
    assert Payout.objects.count() == 5
    for partner in partners:
        ledger_exact(partner)


def test_refunds_racing_a_run_leave_every_ledger_exact():
    """Each partner has two credited commissions; one thread confirms a run while the others refund one of
    each partner's commissions, whole or half. Whatever order the locks give, the payout is what was available
    when it was made, less what a later refund took back before it was sent, and the ledger adds up."""
    program = ProgramFactory()
    partners = [payable_partner(program) for _ in range(PARTNERS)]
    refunded = []
    for partner in partners:
        credited(partner, program, amount=10_000)
        refunded.append(credited(partner, program, amount=20_000))
    run = run_preview(program=program, currency="USD", actor="a")

    def act(n: int) -> object:
        if n == 0:
            return run_confirm(run_id=run.pk, actor="a")
        commission = refunded[n - 1]
        whole = n % 2 == 0
        return refund_apply(
            sale=commission.sale, amount=None if whole else 10_000, refund_id=None if whole else f"re_{n}", reason=""
        )

    run_together(PARTNERS + 1, act)

    for n, partner in enumerate(partners, start=1):
        whole = n % 2 == 0
        clawed = 4_000 if whole else 2_000
        [payout] = Payout.objects.filter(partner=partner)
        # Either the refund came first (the payout is 6,000 less the clawback) or the payout did (6,000, then
        # reduced by the clawback while still pending): the same amount either way.
        assert payout.amount_cents == 6_000 - clawed
        assert payout.status == PayoutStatus.PENDING
        assert balance(partner) == 0
        ledger_exact(partner)
