"""Across processes: signed Stripe events through the real endpoint, processed by a real Celery worker on
Redis: checkout -> sale -> commission -> refund event -> reversal."""

import pytest

from commissions.models import Commission, LedgerEntry
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.stripe_payloads import ACCOUNT, WEBHOOK_SECRET, charge_refunded, checkout_session, event, post_event
from tests.worker import wait_for
from tracking.models import ProcessorEvent

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_checkout_then_refund_through_a_real_worker(client, settings, celery_worker_process, monkeypatch):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET)
    program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)
    customer = CustomerFactory(link=ReferralLinkFactory(program=program))

    session = checkout_session(amount=10000, metadata={"svc_click_id": customer.click_id})
    paid = event("checkout.session.completed", session)
    assert post_event(client, paid).status_code == 200
    commission = wait_for(lambda: Commission.objects.filter(sale__processor_event_id=session["payment_intent"]).first())
    assert commission is not None, ProcessorEvent.objects.values_list("status", "outcome", "last_error").first()
    assert (commission.amount_cents, commission.status, commission.credited) == (2000, "approved", True)

    refunded = event(
        "charge.refunded",
        charge_refunded(payment_intent=session["payment_intent"], amount=10000, refunds=[("re_e2e", 10000)]),
    )
    assert post_event(client, refunded).status_code == 200
    assert wait_for(lambda: Commission.objects.get(pk=commission.pk).status == "reversed")
    entries = sorted(LedgerEntry.objects.filter(commission=commission).values_list("kind", "amount_cents"))
    assert entries == [("credit", 2000), ("deduction", -2000)]
    assert set(ProcessorEvent.objects.values_list("status", flat=True)) == {"processed"}
