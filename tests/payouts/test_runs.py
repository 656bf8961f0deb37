"""Payout runs through the services: who is due, what a confirm debits, what refunds and failures give back.
Every test ends with each partner's ledger exact (tests.payouts.money.ledger_exact)."""

import pytest
from django.utils import timezone

from commissions.models import Commission, CommissionStatus, LedgerEntry
from commissions.services import commission_hold, refund_apply, withdrawal_request
from payouts.models import Payout, PayoutCommission, PayoutMinimum, PayoutRunAudit, PayoutStatus, Rail
from payouts.services import (
    PayoutError,
    RunAlreadyConfirmed,
    payout_mark_failed,
    payout_mark_paid,
    run_confirm,
    run_export,
    run_preview,
    scheduled_runs,
)
from tests.factories import PartnerFactory, ProgramFactory
from webhooks.models import WebhookEvent

from .money import balance, credited, ledger_exact, payable_partner, sale_commission

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def test_preview_lists_who_is_due_and_why_some_cannot_be_paid(program):
    ready = payable_partner(program, name="Ann")
    credited(ready, program, amount=10_000)  # 20.00 USD
    small = payable_partner(program, name="Bo")
    credited(small, program, amount=1_000)  # 2.00 USD, under the minimum
    unset = PartnerFactory(workspace=program.workspace, name="Cy")  # no portal account
    credited(unset, program, amount=5_000)
    stripe_unfinished = payable_partner(
        program, name="Di", rail=Rail.STRIPE, transfers_active=False, requirements_due=["external_account"]
    )
    credited(stripe_unfinished, program, amount=5_000)
    PayoutMinimum.objects.create(program=program, currency="USD", minimum_cents=500)

    run = run_preview(program=program, currency="USD", actor="user:owner")

    assert [(line["partner"], line["amount_cents"], line["ready"]) for line in run.lines] == [
        ("Ann", 2_000, True),
        ("Cy", 1_000, False),
        ("Di", 1_000, False),
    ]
    reasons = {line["partner"]: line["reason"] for line in run.lines}
    assert reasons["Cy"].startswith("no portal account")
    assert reasons["Di"] == "Stripe onboarding not finished (still due: external_account)"
    assert run.minimum_cents == 500
    assert not Payout.objects.exists()  # a preview debits nothing
    assert balance(ready) == 2_000
    [audit] = PayoutRunAudit.objects.filter(run=run)
    assert (audit.action, audit.actor, audit.detail) == ("previewed", "user:owner", "1 payable, 20.00 USD")


def test_confirm_makes_one_payout_per_partner_debited_with_its_commissions(program):
    ann = payable_partner(program, name="Ann")
    first, second = credited(ann, program, amount=10_000), credited(ann, program, amount=5_000)
    run = run_preview(program=program, currency="USD", actor="user:owner")

    [payout] = run_confirm(run_id=run.pk, actor="user:owner")

    assert (payout.amount_cents, payout.status, payout.rail, payout.destination) == (
        3_000,
        PayoutStatus.PENDING,
        Rail.PAYPAL,
        ann.account.email,
    )
    debit = LedgerEntry.objects.get(payout=payout)
    assert (debit.kind, debit.amount_cents, debit.program_id) == ("payout", -3_000, program.pk)
    assert balance(ann) == 0
    assert set(PayoutCommission.objects.filter(payout=payout).values_list("commission_id", flat=True)) == {
        first.pk,
        second.pk,
    }
    assert WebhookEvent.objects.filter(type="payout.created", object_id=payout.pk).count() == 1
    run.refresh_from_db()
    assert run.status == "confirmed" and run.confirmed_at is not None
    ledger_exact(ann)


def test_a_run_is_confirmed_once_and_a_second_run_finds_nothing_due(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    run = run_preview(program=program, currency="USD", actor="user:owner")
    later = run_preview(program=program, currency="USD", actor="user:owner")
    assert len(run_confirm(run_id=run.pk, actor="user:owner")) == 1

    with pytest.raises(RunAlreadyConfirmed):
        run_confirm(run_id=run.pk, actor="user:owner")
    assert run_confirm(run_id=later.pk, actor="user:owner") == []  # its preview was made before: nothing left
    assert Payout.objects.count() == 1
    ledger_exact(ann)


def test_the_amount_is_what_is_available_at_confirm_not_at_preview(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    run = run_preview(program=program, currency="USD", actor="user:owner")
    credited(ann, program, amount=5_000)  # approved between preview and confirm

    [payout] = run_confirm(run_id=run.pk, actor="user:owner")
    assert payout.amount_cents == 3_000
    ledger_exact(ann)


def test_held_and_pending_commissions_never_count(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    sale_commission(ann, program, amount=50_000, hold_until=timezone.now() + timezone.timedelta(days=10))
    held = sale_commission(ann, program, amount=70_000)
    commission_hold(commission_id=held.pk, actor="user:owner", reason="check")

    run = run_preview(program=program, currency="USD", actor="user:owner")
    assert [line["amount_cents"] for line in run.lines] == [2_000]


def test_open_withdrawals_are_not_paid_twice(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    withdrawal_request(partner=ann, amount_cents=1_500, currency="USD")

    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    assert payout.amount_cents == 500


def test_every_currency_pays_separately_in_its_own_minor_units(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000, currency="USD")
    credited(ann, program, amount=5_000, currency="EUR")
    credited(ann, program, amount=1_000_000, currency="VND")

    paid = {}
    for currency in ("USD", "EUR", "VND"):
        [payout] = run_confirm(run_id=run_preview(program=program, currency=currency, actor="a").pk, actor="a")
        paid[currency] = payout.amount_cents
    assert paid == {"USD": 2_000, "EUR": 1_000, "VND": 200_000}
    assert {currency: balance(ann, currency) for currency in paid} == {"USD": 0, "EUR": 0, "VND": 0}
    ledger_exact(ann)


def test_a_program_pays_only_its_own_balance(program):
    other = ProgramFactory(workspace=program.workspace)
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    credited(ann, other, amount=50_000)

    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    assert payout.amount_cents == 2_000
    assert balance(ann) == 10_000  # the other program's credit stays for its own run
    ledger_exact(ann)


def test_paid_marks_the_covered_commissions_paid(program):
    ann = payable_partner(program)
    commission = credited(ann, program, amount=10_000)
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")

    assert payout_mark_paid(payout_id=payout.pk, actor="user:owner", reference="PP-123")
    assert not payout_mark_paid(payout_id=payout.pk, actor="user:owner")  # settled once
    commission.refresh_from_db()
    payout.refresh_from_db()
    assert commission.status == CommissionStatus.PAID
    assert (payout.status, payout.rail_reference) == (PayoutStatus.PAID, "PP-123")
    assert WebhookEvent.objects.filter(type="payout.paid", object_id=payout.pk).count() == 1
    ledger_exact(ann)


def test_a_failed_payout_puts_the_money_back_and_the_next_run_pays_it(
    program, mailoutbox, django_capture_on_commit_callbacks
):
    ann = payable_partner(program)
    commission = credited(ann, program, amount=10_000)
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")

    with django_capture_on_commit_callbacks(execute=True):
        assert payout_mark_failed(payout_id=payout.pk, code="receiver_unregistered", message="No PayPal account")
    assert not payout_mark_failed(payout_id=payout.pk, code="again", message="again")
    assert balance(ann) == 2_000
    assert not PayoutCommission.objects.filter(active=True).exists()
    assert WebhookEvent.objects.filter(type="payout.failed", object_id=payout.pk).count() == 1
    [email] = [message for message in mailoutbox if "Payout failed" in message.subject]
    assert email.subject == "Payout failed: 20.00 USD from Acme is back on your balance"
    assert "No PayPal account" in email.body and email.to == [ann.account.email]

    [again] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    assert again.amount_cents == 2_000
    assert list(PayoutCommission.objects.filter(active=True).values_list("commission_id", flat=True)) == [commission.pk]
    ledger_exact(ann)


def test_a_refund_reduces_a_payout_not_sent_yet(program):
    ann = payable_partner(program)
    big = credited(ann, program, amount=10_000)  # 20.00
    credited(ann, program, amount=5_000)  # 10.00
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    assert payout.amount_cents == 3_000

    refund_apply(sale=big.sale, amount=5_000, refund_id="re_1", reason="")  # half: 10.00 clawed back

    payout.refresh_from_db()
    assert (payout.amount_cents, payout.status) == (2_000, PayoutStatus.PENDING)
    assert balance(ann) == 0
    ledger_exact(ann)


def test_a_refund_taking_everything_cancels_the_payout(program):
    ann = payable_partner(program)
    only = credited(ann, program, amount=10_000)
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")

    refund_apply(sale=only.sale, amount=None, refund_id=None, reason="")

    payout.refresh_from_db()
    assert (payout.amount_cents, payout.status) == (0, PayoutStatus.CANCELLED)
    assert balance(ann) == 0
    assert not PayoutCommission.objects.filter(payout=payout, active=True).exists()
    ledger_exact(ann)


def test_a_refund_after_the_payout_left_goes_negative_and_the_next_run_nets_it(program):
    ann = payable_partner(program)
    first = credited(ann, program, amount=10_000)
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    run_export(run_id=payout.run_id, rail=Rail.PAYPAL, actor="a")  # exported: no longer reduced

    refund_apply(sale=first.sale, amount=None, refund_id=None, reason="")
    payout.refresh_from_db()
    assert (payout.amount_cents, payout.status) == (2_000, PayoutStatus.PROCESSING)
    assert balance(ann) == -2_000
    assert payout_mark_paid(payout_id=payout.pk, reference="PP-1")  # the exported batch was paid

    credited(ann, program, amount=25_000)  # 50.00 more
    [netted] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    assert netted.amount_cents == 3_000
    ledger_exact(ann)


def test_a_partner_with_an_open_payout_is_not_paid_again(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    credited(ann, program, amount=10_000)

    run = run_preview(program=program, currency="USD", actor="a")
    assert [line["reason"] for line in run.lines] == ["a payout to this partner is still open"]
    assert run_confirm(run_id=run.pk, actor="a") == []


def test_export_is_for_manual_rails_only(program):
    run = run_preview(program=program, currency="USD", actor="a")
    with pytest.raises(PayoutError):
        run_export(run_id=run.pk, rail=Rail.STRIPE, actor="a")


def test_scheduled_runs_pay_automatic_minimums_only(program):
    ann = payable_partner(program)
    credited(ann, program, amount=10_000)
    manual = ProgramFactory(workspace=program.workspace)
    credited(ann, manual, amount=10_000)
    PayoutMinimum.objects.create(program=program, currency="USD", minimum_cents=100, automatic=True)
    PayoutMinimum.objects.create(program=manual, currency="USD", minimum_cents=100, automatic=False)

    [run] = scheduled_runs()
    run.refresh_from_db()

    assert run.program_id == program.pk and run.status == "confirmed"
    assert list(PayoutRunAudit.objects.filter(run=run).values_list("action", "actor")) == [
        ("previewed", "schedule"),
        ("confirmed", "schedule"),
    ]
    assert Payout.objects.get().program_id == program.pk
    ledger_exact(ann)


def test_commission_statuses_other_than_approved_stay_when_paid(program):
    ann = payable_partner(program)
    refunded = credited(ann, program, amount=10_000)
    refund_apply(sale=refunded.sale, amount=5_000, refund_id="re_1", reason="")
    [payout] = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    assert payout.amount_cents == 1_000
    payout_mark_paid(payout_id=payout.pk)
    assert Commission.objects.get(pk=refunded.pk).status == CommissionStatus.REFUNDED
    ledger_exact(ann)
