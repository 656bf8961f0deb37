"""A payout run over a hundred partners in three currencies, with failures injected at the transfer (accounts that
cannot receive, Stripe 5xx, answers lost after the transfer was made) and manual rails that bounce: every ledger
ends exact and no partner is paid twice. Then the failures are fixed and the next runs pay what was left."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

from commissions.models import LedgerEntry
from payouts.models import Payout, PayoutAccount, PayoutStatus, Rail
from payouts.services import payout_mark_failed, payout_mark_paid, run_confirm, run_export, run_preview
from payouts.stripe_rail import payout_send, payouts_reconcile
from tests.factories import ProgramFactory
from tests.helpers import run_together

from .money import balance, credited, ledger_exact, payable_partner

CURRENCIES = ("USD", "EUR", "VND")
STRIPE_PARTNERS, PAYPAL_PARTNERS, WISE_PARTNERS = 80, 10, 10
LATER = timedelta(minutes=6)


def onboarded(server, program, name):
    partner = payable_partner(program, name=name, rail=Rail.STRIPE)
    account = server.create_account(email=partner.account.email)
    server.complete_onboarding(account["id"])
    PayoutAccount.objects.filter(account=partner.account).update(stripe_account_id=account["id"])
    partner.refresh_from_db()
    return partner, account["id"]


def amount_for(n: int, currency: str) -> int:
    """Sales of different sizes per partner; VND in whole đồng."""
    return {"USD": 5_000 + n * 137, "EUR": 3_000 + n * 91, "VND": 1_000_000 + n * 5_000}[currency]


def credited_by_currency(partner) -> dict[str, int]:
    return {
        currency: LedgerEntry.objects.filter(
            partner=partner, currency=currency, kind=LedgerEntry.Kind.CREDIT
        ).aggregate(total=Sum("amount_cents"))["total"]
        or 0
        for currency in CURRENCIES
    }


def paid_by_currency(partner) -> dict[str, int]:
    paid = Payout.objects.filter(partner=partner, status=PayoutStatus.PAID)
    return {
        currency: paid.filter(currency=currency).aggregate(total=Sum("amount_cents"))["total"] or 0
        for currency in CURRENCIES
    }


@pytest.mark.django_db
def test_a_hundred_partners_in_three_currencies_with_failures(stripe_server, django_capture_on_commit_callbacks):
    program = ProgramFactory(name="Big Program", hold_days=0)
    stripe_server.set_balance("vnd", 10**12)
    stripe_partners = [onboarded(stripe_server, program, f"S{n:03}") for n in range(STRIPE_PARTNERS)]
    paypal = [payable_partner(program, name=f"P{n:03}") for n in range(PAYPAL_PARTNERS)]
    wise = [
        payable_partner(program, name=f"W{n:03}", rail=Rail.WISE, bank_reference=f"GB00TEST{n:08}")
        for n in range(WISE_PARTNERS)
    ]
    everyone = [partner for partner, _ in stripe_partners] + paypal + wise
    for n, partner in enumerate(everyone):
        for currency in CURRENCIES:
            credited(partner, program, amount=amount_for(n, currency), currency=currency)

    # Failures at the transfer: five accounts that cannot receive, three Stripe 5xx, two answers lost after the
    # transfer was made.
    refusing = {account for _, account in stripe_partners[:5]}
    for account in refusing:
        stripe_server.fail_transfers_to(account, code="account_invalid", message="This account cannot receive.")
    stripe_server.fail_next_transfers(3, code="api_error", status=500)
    stripe_server.crash_next_transfers(2)

    for currency in CURRENCIES:
        run = run_preview(program=program, currency=currency, actor="user:owner")
        assert sum(line["ready"] for line in run.lines) == len(everyone)
        with django_capture_on_commit_callbacks(execute=True):
            made = run_confirm(run_id=run.pk, actor="user:owner")  # Stripe payouts sent by their tasks
        assert len(made) == len(everyone)
    assert Payout.objects.count() == 3 * len(everyone)

    # What a task could not settle (a 5xx or a lost answer) the reconciler settles later: sent again or found.
    outcomes = payouts_reconcile(now=timezone.now() + LATER)
    assert set(outcomes) <= {"paid"}
    assert payouts_reconcile(now=timezone.now() + 2 * LATER) == {}

    # The manual rails: exported, paid elsewhere, two PayPal payments bounced.
    bounced = {paypal[0].pk, paypal[1].pk}
    for currency_run in Payout.objects.values_list("run_id", flat=True).distinct():
        for rail in (Rail.PAYPAL, Rail.WISE):
            for payout in run_export(run_id=currency_run, rail=rail, actor="user:owner"):
                if payout.partner_id in bounced and payout.currency == "USD":
                    payout_mark_failed(payout_id=payout.pk, code="bounced", message="Receiver unregistered", actor="a")
                else:
                    payout_mark_paid(payout_id=payout.pk, reference=f"PP-{payout.pk}", actor="user:owner")

    statuses = Counter(Payout.objects.values_list("status", flat=True))
    assert statuses == {PayoutStatus.PAID: 3 * len(everyone) - 3 * len(refusing) - 2, PayoutStatus.FAILED: 17}
    for payout in Payout.objects.filter(rail=Rail.STRIPE):
        transfers = stripe_server.transfers_with_metadata("payout_id", str(payout.pk))
        assert len(transfers) == (1 if payout.status == PayoutStatus.PAID else 0), payout
        if transfers:
            assert transfers[0]["amount"] == payout.amount_cents
            assert transfers[0]["currency"] == payout.currency.lower()
    for partner in everyone:
        ledger_exact(partner)
        failed = Payout.objects.filter(partner=partner, status=PayoutStatus.FAILED)
        for currency in CURRENCIES:
            assert balance(partner, currency) == sum(p.amount_cents for p in failed if p.currency == currency)

    # Fixed: the refusing accounts can receive again, the bounced partners corrected their email.
    for account in refusing:
        stripe_server.heal_transfers_to(account)
    for currency in CURRENCIES:
        with django_capture_on_commit_callbacks(execute=True):
            made = run_confirm(
                run_id=run_preview(program=program, currency=currency, actor="user:owner").pk, actor="user:owner"
            )
        for payout in made:
            if payout.rail != Rail.STRIPE:
                payout_mark_paid(payout_id=payout.pk, reference="PP-again", actor="user:owner")

    for partner in everyone:
        ledger_exact(partner)
        assert {currency: balance(partner, currency) for currency in CURRENCIES} == dict.fromkeys(CURRENCIES, 0)
        # Paid exactly what was credited, in every currency: nobody paid twice, nobody short.
        assert paid_by_currency(partner) == credited_by_currency(partner)
    transferred = Counter()
    for transfer in stripe_server.transfers:
        transferred[transfer["currency"]] += transfer["amount"] - transfer["amount_reversed"]
    stripe_paid = Payout.objects.filter(rail=Rail.STRIPE, status=PayoutStatus.PAID)
    for currency in CURRENCIES:
        total = stripe_paid.filter(currency=currency).aggregate(total=Sum("amount_cents"))["total"]
        assert transferred[currency.lower()] == total


@pytest.mark.django_db(transaction=True)
def test_every_payout_sent_by_two_workers_at_once_is_one_transfer(stripe_server, monkeypatch):
    monkeypatch.setattr("payouts.services._send_later", lambda payout_ids: None)  # the workers below send them
    program = ProgramFactory(hold_days=0)
    partners = [onboarded(stripe_server, program, f"S{n:02}")[0] for n in range(10)]
    for partner in partners:
        credited(partner, program, amount=10_000)
    payouts = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")
    ids = [payout.pk for payout in payouts]

    outcomes = run_together(2 * len(ids), lambda n: payout_send(payout_id=ids[n // 2]))

    # Each payout: one worker's transfer settles it; the other finds it processing and gets the same transfer
    # back (the same idempotency key), or finds it settled and sends nothing.
    assert Counter(outcomes)["paid"] >= len(ids) and set(outcomes) <= {"paid", ""}
    for payout_id in ids:
        assert len(stripe_server.transfers_with_metadata("payout_id", str(payout_id))) == 1
        assert Payout.objects.get(pk=payout_id).status == PayoutStatus.PAID
    for partner in partners:
        ledger_exact(partner)
