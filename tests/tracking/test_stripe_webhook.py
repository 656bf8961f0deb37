import time

import pytest

from tests.factories import ProgramFactory
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event
from tracking.models import ProcessorEvent, SaleEvent
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stripe_webhook_secret")]


@pytest.fixture
def program():
    return ProgramFactory(stripe_account_id=ACCOUNT)


def test_a_signed_event_is_stored_once_and_acknowledged(client, program):
    payload = event("checkout.session.completed", checkout_session())
    response = post_event(client, payload)
    assert response.status_code == 200 and response.json() == {"received": True}
    stored = ProcessorEvent.objects.get()
    assert (stored.event_id, stored.event_type, stored.account_id, stored.program) == (
        payload["id"],
        "checkout.session.completed",
        ACCOUNT,
        program,
    )


def test_a_redelivery_is_acknowledged_and_not_processed_again(client, program, django_capture_on_commit_callbacks):
    payload = event("checkout.session.completed", checkout_session())
    with django_capture_on_commit_callbacks(execute=True) as first:
        post_event(client, payload)
    with django_capture_on_commit_callbacks(execute=True) as second:
        again = post_event(client, payload)
    assert again.status_code == 200 and again.json() == {"received": True, "duplicate": True}
    # The first queues its processing, and the processing (run here) the fan-out of the sale's sale.created
    # event; the redelivery queues nothing.
    assert len(first) == 2 and len(second) == 0
    assert ProcessorEvent.objects.count() == 1 and SaleEvent.objects.count() == 1
    assert list(WebhookEvent.objects.values_list("type", flat=True)) == ["sale.created"]


@pytest.mark.parametrize(
    ("signature", "why"),
    [("", "missing"), ("t=1,v1=deadbeef", "forged"), (None, "wrong secret"), ("garbage", "malformed")],
)
def test_unsigned_or_forged_payloads_are_refused_and_nothing_is_stored(client, program, signature, why):
    payload = event("checkout.session.completed", checkout_session())
    if signature is None:
        response = post_event(client, payload, secret="whsec_other")
    else:
        response = post_event(client, payload, signature=signature)
    assert response.status_code == 400, why
    assert response.json()["received"] is False
    assert not ProcessorEvent.objects.exists()


def test_a_stale_signature_is_refused(client, program):
    payload = event("checkout.session.completed", checkout_session())
    response = post_event(client, payload, timestamp=int(time.time()) - 301)
    assert response.status_code == 400
    assert response.json()["error"] == "Invalid or expired signature"
    assert not ProcessorEvent.objects.exists()


def test_a_payload_that_is_not_an_event_is_refused(client, program):
    response = post_event(client, {"hello": "world"})
    assert response.status_code == 400 and not ProcessorEvent.objects.exists()


def test_without_a_configured_secret_it_answers_503(client, program, settings):
    settings.STRIPE_WEBHOOK_SECRET = ""
    response = post_event(client, event("checkout.session.completed", checkout_session()))
    assert response.status_code == 503 and not ProcessorEvent.objects.exists()


def test_an_event_of_an_unconnected_account_is_kept_and_ignored(client, program, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post_event(client, event("checkout.session.completed", checkout_session(), account="acct_Unknown"))
    stored = ProcessorEvent.objects.get()
    assert stored.status == "ignored" and "acct_Unknown" in stored.outcome
    assert not SaleEvent.objects.exists()


def test_only_post_is_allowed(client):
    assert client.get("/webhooks/stripe").status_code == 405


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
def test_a_signed_event_holding_text_postgresql_cannot_store_is_kept_with_it_replaced(client, program, bad):
    # Metadata is whatever the integrator's checkout put there; a 500 here would make Stripe redeliver forever.
    session = checkout_session(metadata={"note": f"a{bad}b", f"k{bad}": "v"}, email=f"buyer{bad}@example.com")
    response = post_event(client, event("checkout.session.completed", session))
    assert response.status_code == 200 and response.json() == {"received": True}
    stored = ProcessorEvent.objects.get().payload["data"]["object"]
    assert stored["metadata"] == {"note": "a\ufffdb", "k\ufffd": "v"}
    assert stored["customer_details"]["email"] == "buyer\ufffd@example.com"


@pytest.mark.parametrize(("ahead", "accepted"), [(3600, False), (301, False), (240, True)])
def test_a_signature_dated_in_the_future_is_refused_past_the_tolerance(client, program, ahead, accepted):
    payload = event("checkout.session.completed", checkout_session())
    response = post_event(client, payload, timestamp=int(time.time()) + ahead)
    assert response.status_code == (200 if accepted else 400)
    if not accepted:
        assert response.json()["error"] == "Invalid or expired signature"
    assert ProcessorEvent.objects.exists() == accepted
