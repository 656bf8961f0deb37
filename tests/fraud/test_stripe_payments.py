"""The sale rules judge a sale recorded from a Stripe payment as they judge one sent to the sale API: the same
entry point gives both their commission (tracking.services.settlement.commission_create_for_sale)."""

import pytest

from commissions.models import Commission, LedgerEntry
from tests.factories import CustomerFactory, PartnerFactory, ProgramFactory, ReferralLinkFactory
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stripe_webhook_secret")]


def test_a_self_referred_stripe_payment_is_held_and_credits_nothing(client, django_capture_on_commit_callbacks):
    program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)
    partner = PartnerFactory(workspace=program.workspace, email="pat@agency.example")
    customer = CustomerFactory(link=ReferralLinkFactory(program=program, partner=partner), email="PAT@agency.example")
    session = checkout_session(amount=5000, metadata={"svc_click_id": customer.click_id})
    with django_capture_on_commit_callbacks(execute=True):
        assert post_event(client, event("checkout.session.completed", session)).status_code == 200
    commission = Commission.objects.get(sale__processor_event_id=session["payment_intent"])
    assert (commission.status, commission.credited, commission.hold_rule) == ("pending", False, "self_referral")
    assert "the customer's email is the partner's" in commission.hold_reason
    money = LedgerEntry.objects.filter(commission=commission).exclude(kind=LedgerEntry.Kind.REVIEW)
    assert not money.exists()
