"""`manage.py stripe_trigger`: a signed test Stripe event sent over HTTP to the live test server's /webhooks/stripe,
verified and processed there as Stripe's own would be (tasks run in-process), and the outcome printed."""

from io import StringIO

import pytest
import stripe
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from commissions.models import CommissionStatus
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.gunicorn import free_port
from tests.stripe_payloads import ACCOUNT
from tracking.models import ProcessorEvent, SaleEvent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("stripe_webhook_secret")]


@pytest.fixture
def server(live_server, settings) -> str:
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


def trigger(*args: str) -> str:
    out = StringIO()
    call_command("stripe_trigger", *args, "--wait", "0", stdout=out)
    return out.getvalue()


def _click(link) -> str:
    response = APIClient().post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://{link.program.domain}/?aff={link.short_link}"},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()["click_id"]


def _payment_of(text: str) -> str:
    return next(line.split()[1].rstrip(";") for line in text.splitlines() if line.startswith("Payment "))


def test_a_checkout_for_a_click_records_the_sale_with_its_commission_and_a_refund_reverses_it(server):
    program = ProgramFactory.create(commission_rate=10, hold_days=30)
    link = ReferralLinkFactory.create(program=program)
    click_id = _click(link)

    text = trigger(
        "checkout.session.completed", "--program", str(program.pk), "--connect-local", "--click-id", click_id
    )

    program.refresh_from_db()
    assert program.stripe_account_id.startswith("acct_local_") and program.stripe_connected_at is not None
    stored = ProcessorEvent.objects.get()
    assert (stored.status, stored.account_id, stored.program_id) == ("processed", program.stripe_account_id, program.pk)
    sale = SaleEvent.objects.get()
    assert (sale.amount_cents, sale.attributed_by, sale.customer.click_id) == (4900, "stripe:svc_click_id", click_id)
    assert (sale.commission.amount_cents, sale.commission.status) == (490, CommissionStatus.PENDING)
    assert f"Sent checkout.session.completed {stored.event_id} for program #{program.pk} to {server}" in text
    assert f"Processed: sale #{sale.pk} attributed by svc_click_id, commission #{sale.commission.pk}" in text
    payment = _payment_of(text)
    assert payment == sale.processor_event_id and payment.startswith("pi_local_")
    assert f"--program {program.pk} --payment-intent {payment}" in text

    refunded = trigger("charge.refunded", "--program", str(program.pk), "--payment-intent", payment)

    sale.commission.refresh_from_db()
    assert sale.commission.status == CommissionStatus.REVERSED
    assert f"Processed: reversed: commission #{sale.commission.pk} reduced by 490" in refunded


def test_a_connected_program_keeps_its_account_and_a_test_payment_earns_nothing(server):
    program = ProgramFactory.create(stripe_account_id=ACCOUNT)
    text = trigger(
        "invoice.payment_succeeded", "--program", str(program.pk), "--connect-local", "--test", "--amount", "1900"
    )
    program.refresh_from_db()
    assert program.stripe_account_id == ACCOUNT
    sale = SaleEvent.objects.get()
    assert (sale.is_test, sale.amount_cents, sale.sale_type) == (True, 1900, "subscription")
    assert "Processed: test payment recorded (no commission)" in text


def test_an_unconnected_program_is_refused_with_the_way_out_and_nothing_is_sent(server):
    program = ProgramFactory.create()
    with pytest.raises(CommandError, match="is not connected to a Stripe account.*add --connect-local"):
        trigger("checkout.session.completed", "--program", str(program.pk))
    assert not ProcessorEvent.objects.exists()
    program.refresh_from_db()
    assert program.stripe_account_id == ""


def test_a_refund_of_an_unknown_payment_is_refused(server):
    program = ProgramFactory.create(stripe_account_id=ACCOUNT)
    with pytest.raises(CommandError, match="has no sale with the payment id pi_nope: send checkout.session"):
        trigger("charge.refunded", "--program", str(program.pk), "--payment-intent", "pi_nope")
    with pytest.raises(CommandError, match="charge.refunded needs --payment-intent"):
        trigger("charge.refunded", "--program", str(program.pk))


def test_without_a_webhook_secret_it_says_how_to_set_one(server, settings):
    settings.STRIPE_WEBHOOK_SECRET = ""
    program = ProgramFactory.create(stripe_account_id=ACCOUNT)
    with pytest.raises(CommandError, match="STRIPE_WEBHOOK_SECRET is not set.*STRIPE_WEBHOOK_SECRET=whsec_local_test"):
        trigger("checkout.session.completed", "--program", str(program.pk))


def test_a_refused_signature_stops_it_with_the_servers_answer(server, monkeypatch):
    program = ProgramFactory.create(stripe_account_id=ACCOUNT)
    sign = stripe.WebhookSignature.generate_signature_header
    # As if the server read another secret than the command.
    monkeypatch.setattr(
        stripe.WebhookSignature,
        "generate_signature_header",
        lambda payload, secret, timestamp=None: sign(payload, "whsec_other"),
    )
    with pytest.raises(CommandError, match="400 .*Invalid or expired signature.*STRIPE_WEBHOOK_SECRET differs"):
        trigger("checkout.session.completed", "--program", str(program.pk))
    assert not ProcessorEvent.objects.exists()


def test_an_unreachable_server_is_named():
    program = ProgramFactory.create(stripe_account_id=ACCOUNT)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CommandError, match=f"Could not reach {url}/webhooks/stripe"):
        trigger("checkout.session.completed", "--program", str(program.pk), "--base-url", url)
