"""A confirmed Stripe payout crosses processes as in production: the run commits, its send task goes through Redis to
a real Celery worker, which makes the transfer on the Stripe-compatible server and settles the payout."""

import pytest

from payouts.models import Payout, PayoutAccount, PayoutStatus, Rail
from payouts.services import run_confirm, run_preview
from tests.factories import ProgramFactory
from tests.worker import wait_for

from .money import balance, credited, ledger_exact, payable_partner

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def payouts_worker(stripe_server, monkeypatch, request):
    """A worker whose Stripe calls go to the test's server, with its key."""
    monkeypatch.setenv("STRIPE_API_BASE", stripe_server.url)
    monkeypatch.setenv("STRIPE_SECRET_KEY", stripe_server.api_key)
    return request.getfixturevalue("celery_worker_process")


def test_a_worker_sends_each_confirmed_stripe_payout_once(stripe_server, payouts_worker):
    program = ProgramFactory(hold_days=0)
    partners = []
    for n in range(3):
        partner = payable_partner(program, name=f"S{n}", rail=Rail.STRIPE)
        assert partner.account is not None
        account = stripe_server.create_account(email=partner.account.email)
        stripe_server.complete_onboarding(account["id"])
        PayoutAccount.objects.filter(account=partner.account).update(stripe_account_id=account["id"])
        credited(partner, program, amount=10_000 * (n + 1))
        partners.append(partner)

    payouts = run_confirm(run_id=run_preview(program=program, currency="USD", actor="a").pk, actor="a")

    ids = [payout.pk for payout in payouts]
    settled = wait_for(
        lambda: Payout.objects.filter(pk__in=ids, status=PayoutStatus.PAID).count() == len(ids), timeout=60
    )
    assert settled, list(Payout.objects.filter(pk__in=ids).values_list("status", "failure_message"))
    for payout_id in ids:
        assert len(stripe_server.transfers_with_metadata("payout_id", str(payout_id))) == 1
    for partner in partners:
        assert balance(partner) == 0
        ledger_exact(partner)
