"""The Stripe rail against a Stripe-compatible server (tests/stripe_fake), through the real stripe library: Express
onboarding, transfers with their idempotency key and transfer_group, refusals, lost answers, crashes between the
ledger debit and the transfer, reversals, and the payouts' signed webhook."""

from datetime import timedelta
from typing import Any

import pytest
import stripe
from django.test import Client
from django.utils import timezone

from commissions.models import Commission, CommissionStatus
from payouts.models import Payout, PayoutAccount, PayoutStatus, Rail
from payouts.services import run_confirm, run_preview
from payouts.stripe_rail import account_refresh, onboarding_link, payout_send, payouts_reconcile
from programs.models import PartnerAccount
from tests.factories import ProgramFactory
from tests.stripe_fake.events import event, signed
from tests.stripe_fake.server import StripeFake
from tests.stripe_payloads import WEBHOOK_SECRET

from .money import balance, credited, ledger_exact, payable_partner

pytestmark = pytest.mark.django_db

LATER = timedelta(minutes=6)  # past payouts.stripe_rail.UNSETTLED_AFTER


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def onboarded(server: StripeFake, program, **fields):
    """A partner whose Express account exists on the server and finished onboarding."""
    partner = payable_partner(program, rail=Rail.STRIPE, **fields)
    assert partner.account is not None
    account = server.create_account(email=partner.account.email)
    server.complete_onboarding(account["id"])
    PayoutAccount.objects.filter(account=partner.account).update(stripe_account_id=account["id"])
    return partner


def confirmed(program, currency: str = "USD") -> list[Payout]:
    return run_confirm(run_id=run_preview(program=program, currency=currency, actor="a").pk, actor="a")


def post_event(payload: dict[str, Any], secret: str = WEBHOOK_SECRET):
    body, signature = signed(payload, secret)
    return Client().post(
        "/api/payouts/stripe/webhook", body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature
    )


# --- Express accounts -------------------------------------------------------------------------------------------


def test_onboarding_creates_one_express_account_with_transfers_requested(stripe_server):
    account = PartnerAccount.objects.create(email="pat@example.com")
    url = onboarding_link(account=account, return_url="https://svc.test/r", refresh_url="https://svc.test/f")
    again = onboarding_link(account=account, return_url="https://svc.test/r", refresh_url="https://svc.test/f")

    payout_account = PayoutAccount.objects.get(account=account)
    assert [acct for acct in stripe_server.accounts] == [payout_account.stripe_account_id]
    made = stripe_server.account(payout_account.stripe_account_id)
    assert (made["type"], made["email"], made["metadata"]) == (
        "express",
        "pat@example.com",
        {"partner_account_id": str(account.pk)},
    )
    assert url.startswith(stripe_server.url) and again.startswith(stripe_server.url)
    assert (payout_account.rail, payout_account.transfers_active) == (Rail.STRIPE, False)

    stripe_server.complete_onboarding(payout_account.stripe_account_id)
    refreshed = account_refresh(payout_account)
    assert (refreshed.transfers_active, refreshed.payouts_enabled, refreshed.requirements_due) == (True, True, [])


def test_account_updated_events_keep_the_payout_account_current(stripe_server, settings):
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = ["whsec_other", WEBHOOK_SECRET]
    account = PartnerAccount.objects.create(email="pat@example.com")
    onboarding_link(account=account, return_url="https://svc.test/r", refresh_url="https://svc.test/f")
    acct = PayoutAccount.objects.get(account=account).stripe_account_id
    stripe_server.set_account(acct, currently_due=["external_account", "individual.dob.day"])

    response = post_event(event("account.updated", stripe_server.account(acct), account=acct))
    assert response.status_code == 200 and response.json() == {"received": True, "applied": "account updated"}
    assert PayoutAccount.objects.get(account=account).requirements_due == ["external_account", "individual.dob.day"]

    stripe_server.complete_onboarding(acct)
    post_event(event("account.updated", stripe_server.account(acct), account=acct))
    assert PayoutAccount.objects.get(account=account).transfers_active


def test_the_payouts_webhook_refuses_what_stripe_did_not_sign(settings):
    payload = event("account.updated", {"id": "acct_x", "object": "account"})
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = []
    assert post_event(payload).status_code == 503
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = [WEBHOOK_SECRET]
    assert post_event(payload, secret="whsec_forged").status_code == 400
    for body in ("", "[]", "{", '{"data": 1}', '{"data": {"object": 5}}'):
        response = Client().post(
            "/api/payouts/stripe/webhook", body, content_type="application/json", HTTP_STRIPE_SIGNATURE="t=1,v1=00"
        )
        assert response.status_code == 400, body
    assert Client().get("/api/payouts/stripe/webhook").status_code == 405
    response = post_event(payload)  # signed, but about an account that is not a partner's
    assert response.status_code == 200 and response.json()["applied"] is None


# --- Transfers --------------------------------------------------------------------------------------------------


def test_a_confirmed_stripe_payout_is_sent_once_and_settles_paid(
    stripe_server, program, django_capture_on_commit_callbacks
):
    partner = onboarded(stripe_server, program)
    commission = credited(partner, program, amount=10_000)

    with django_capture_on_commit_callbacks(execute=True):
        [payout] = confirmed(program)

    payout.refresh_from_db()
    [transfer] = stripe_server.transfers
    assert (transfer["amount"], transfer["currency"], transfer["destination"]) == (2_000, "usd", payout.destination)
    assert transfer["transfer_group"] == f"payout_{payout.pk}"
    assert transfer["metadata"] == {"payout_id": str(payout.pk), "partner_id": str(partner.pk)}
    assert (payout.status, payout.stripe_transfer_id, payout.attempts) == (PayoutStatus.PAID, transfer["id"], 1)
    assert Commission.objects.get(pk=commission.pk).status == CommissionStatus.PAID
    assert payout_send(payout_id=payout.pk) == ""  # nothing more to send
    assert len(stripe_server.transfers) == 1
    ledger_exact(partner)


def test_a_refused_transfer_fails_the_payout_and_puts_the_money_back(
    stripe_server, program, mailoutbox, django_capture_on_commit_callbacks
):
    partner = onboarded(stripe_server, program)
    credited(partner, program, amount=10_000)
    stripe_server.fail_transfers_to(
        PayoutAccount.objects.get(account=partner.account).stripe_account_id,
        code="account_invalid",
        message="The destination account cannot receive transfers.",
    )

    with django_capture_on_commit_callbacks(execute=True):
        [payout] = confirmed(program)

    payout.refresh_from_db()
    assert (payout.status, payout.failure_code) == (PayoutStatus.FAILED, "account_invalid")
    assert stripe_server.transfers == []
    assert balance(partner) == 2_000
    [email] = [message for message in mailoutbox if message.subject.startswith("Payout failed")]
    assert "The destination account cannot receive transfers." in email.body
    ledger_exact(partner)


def test_a_lost_answer_is_settled_by_the_reconciler_from_the_transfer_group(stripe_server, program):
    partner = onboarded(stripe_server, program)
    credited(partner, program, amount=10_000)
    [payout] = confirmed(program)  # its task never ran
    stripe_server.crash_next_transfers(1)

    with pytest.raises(stripe.APIConnectionError):
        payout_send(payout_id=payout.pk)
    payout.refresh_from_db()
    assert payout.status == PayoutStatus.PROCESSING and len(stripe_server.transfers) == 1  # made, answer lost

    assert payouts_reconcile(now=timezone.now()) == {}  # too recent: the task's own retry may still come
    assert payouts_reconcile(now=timezone.now() + LATER) == {"paid": 1}
    payout.refresh_from_db()
    assert payout.status == PayoutStatus.PAID
    assert payout.stripe_transfer_id == stripe_server.transfers[0]["id"]
    assert len(stripe_server.transfers_with_metadata("payout_id", str(payout.pk))) == 1
    ledger_exact(partner)


def test_a_worker_killed_after_the_ledger_debit_is_resumed_by_the_reconciler(stripe_server, program):
    partner = onboarded(stripe_server, program)
    credited(partner, program, amount=10_000)
    [payout] = confirmed(program)  # debited; the send task was lost with the worker
    assert balance(partner) == 0 and stripe_server.transfers == []

    assert payouts_reconcile(now=timezone.now() + LATER) == {"paid": 1}
    assert payouts_reconcile(now=timezone.now() + LATER * 2) == {}
    assert len(stripe_server.transfers_in_group(f"payout_{payout.pk}")) == 1
    ledger_exact(partner)


def test_a_stripe_outage_leaves_the_payout_processing_and_the_retry_sends_it_once(stripe_server, program):
    partner = onboarded(stripe_server, program)
    credited(partner, program, amount=10_000)
    [payout] = confirmed(program)
    stripe_server.fail_next_transfers(1, code="api_error", status=500)

    with pytest.raises(stripe.APIError):
        payout_send(payout_id=payout.pk)
    assert Payout.objects.get(pk=payout.pk).status == PayoutStatus.PROCESSING
    assert payout_send(payout_id=payout.pk) == "paid"  # the task's retry
    assert len(stripe_server.transfers) == 1
    ledger_exact(partner)


def test_a_reversed_transfer_turns_the_paid_payout_failed(stripe_server, program, settings):
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = [WEBHOOK_SECRET]
    partner = onboarded(stripe_server, program)
    commission = credited(partner, program, amount=10_000)
    [payout] = confirmed(program)
    assert payout_send(payout_id=payout.pk) == "paid"
    transfer = stripe.Transfer.retrieve(Payout.objects.get(pk=payout.pk).stripe_transfer_id)
    stripe.Transfer.create_reversal(transfer.id)
    reversed_transfer = stripe_server.transfers[0]
    assert reversed_transfer["reversed"]

    response = post_event(event("transfer.reversed", reversed_transfer))
    assert response.json()["applied"] == "payout failed"
    assert post_event(event("transfer.reversed", reversed_transfer)).json()["applied"] == "already settled"
    payout.refresh_from_db()
    assert (payout.status, payout.failure_code) == (PayoutStatus.FAILED, "transfer_reversed")
    assert Commission.objects.get(pk=commission.pk).status == CommissionStatus.APPROVED
    assert balance(partner) == 2_000
    ledger_exact(partner)


def test_transfer_created_settles_a_payout_whose_answer_was_lost(stripe_server, program, settings):
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = [WEBHOOK_SECRET]
    partner = onboarded(stripe_server, program)
    credited(partner, program, amount=10_000)
    [payout] = confirmed(program)
    stripe_server.crash_next_transfers(1)
    with pytest.raises(stripe.APIConnectionError):
        payout_send(payout_id=payout.pk)

    assert post_event(event("transfer.created", stripe_server.transfers[0])).json()["applied"] == "payout paid"
    assert Payout.objects.get(pk=payout.pk).status == PayoutStatus.PAID
    # A transfer naming the payout but sent elsewhere is not taken as its own.
    forged = dict(stripe_server.transfers[0], destination="acct_someone_else")
    assert post_event(event("transfer.created", forged)).json()["applied"] is None
    ledger_exact(partner)


def test_a_partner_paid_by_paypal_stays_so_until_stripe_can_receive(stripe_server, program):
    partner = payable_partner(program)  # PayPal
    assert partner.account is not None
    onboarding_link(account=partner.account, return_url="https://svc.test/r", refresh_url="https://svc.test/f")
    payout_account = PayoutAccount.objects.get(account=partner.account)
    assert (payout_account.rail, payout_account.stripe_account_id[:5]) == (Rail.PAYPAL, "acct_")
    credited(partner, program, amount=10_000)
    [paid_by_paypal] = confirmed(program)
    assert paid_by_paypal.rail == Rail.PAYPAL

    stripe_server.complete_onboarding(payout_account.stripe_account_id)
    assert account_refresh(payout_account).rail == Rail.STRIPE


@pytest.mark.parametrize(
    "event_type, obj",
    [
        ("account.updated", {"id": "acct_\x00x", "object": "account"}),
        ("account.updated", {"id": 5}),
        ("account.updated", {"id": ["acct_x"]}),
        ("transfer.created", {"id": "tr_1", "metadata": ["payout_id", "1"]}),
        ("transfer.created", {"id": "tr_1", "metadata": "payout_id=1"}),
        ("transfer.created", {"id": "tr_1", "transfer_group": "payout_²"}),
        ("transfer.created", {"id": "tr_1", "transfer_group": "payout_" + "9" * 40}),
        ("transfer.created", {"id": "tr_1", "metadata": {"payout_id": 1.5}}),
        ("transfer.reversed", {"id": "tr_1", "metadata": {"payout_id": "{payout}"}, "amount": "x"}),
        ("transfer.created", {"id": "tr_\x00", "metadata": {"payout_id": "{payout}"}}),
        ("transfer.created", {"id": {"x": 1}, "metadata": {"payout_id": "{payout}"}}),
    ],
)
def test_signed_events_of_unexpected_shape_change_nothing(stripe_server, program, settings, event_type, obj):
    """Signed by Stripe, yet read defensively: never a 500, nothing settled from a field of the wrong type."""
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = [WEBHOOK_SECRET]
    partner = onboarded(stripe_server, program)
    credited(partner, program, amount=10_000)
    [payout] = confirmed(program)
    if isinstance(obj.get("metadata"), dict) and obj["metadata"].get("payout_id") == "{payout}":
        obj = {**obj, "metadata": {"payout_id": str(payout.pk)}}

    response = post_event(event(event_type, obj))

    assert response.status_code == 200, response.content
    assert response.json()["applied"] in (None, "partly reversed: left as is")
    assert Payout.objects.get(pk=payout.pk).status == PayoutStatus.PENDING
    ledger_exact(partner)


def test_an_account_update_of_unexpected_shape_stores_only_what_it_can_read(stripe_server, settings):
    settings.STRIPE_PAYOUTS_WEBHOOK_SECRETS = [WEBHOOK_SECRET]
    account = PartnerAccount.objects.create(email="pat@example.com")
    onboarding_link(account=account, return_url="https://svc.test/r", refresh_url="https://svc.test/f")
    acct = PayoutAccount.objects.get(account=account).stripe_account_id
    weird = {
        "id": acct,
        "capabilities": ["transfers"],
        "payouts_enabled": "yes",
        "requirements": {"currently_due": ["external_account", "\x00", 5, "x" * 500], "disabled_reason": "a\x00b"},
    }

    assert post_event(event("account.updated", weird, account=acct)).status_code == 200
    stored = PayoutAccount.objects.get(account=account)
    assert (stored.transfers_active, stored.payouts_enabled) == (False, False)
    assert (stored.requirements_due, stored.disabled_reason) == (["external_account"], "ab")
