"""A partial Stripe refund told by charge.refunded and by refund.created claws back once, in any order. Since Stripe
API version 2022-11-15 a Charge carries no `refunds` list, only `amount_refunded` (docs.stripe.com/upgrades
2022-11-15, "The Charge object no longer auto-expands refunds"): with the platform key the program's connected
account is asked GET /v1/refunds?charge=<id> (a local fake here) and each refund applies by its own id, as
refund.created applies it; without the key the charge's refunded total applies, and a refund.created for a charge
counted that way leaves it to charge.refunded."""

import secrets
from collections.abc import Iterator
from functools import cached_property
from itertools import permutations
from typing import Any

import pytest
import stripe

from commissions.models import Commission
from programs.models import Program
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import run_together
from tests.stripe_account import StripeAccount, stripe_account_serving
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event
from tracking.models import ProcessorEvent
from tracking.stripe.events import processor_event_attempt
from tracking.stripe.services import processor_events_replay

SECRET_KEY = "sk_test_refundlist_platform"
REFUND_A, REFUND_B = "re_3MtHbFLkdIwHu7ix0i2Pq8dA", "re_3MtHbFLkdIwHu7ix0i2Pq8dB"


def stripe_charge(*, charge_id: str, payment_intent: str, amount: int, amount_refunded: int) -> dict[str, Any]:
    """A refunded Charge as charge.refunded carries it on API versions from 2022-11-15 (Charge object,
    docs.stripe.com/api/charges/object; stripe/openapi fixtures3.json `charge`): `amount_refunded` so far, no
    `refunds` list."""
    return {
        "id": charge_id,
        "object": "charge",
        "amount": amount,
        "amount_captured": amount,
        "amount_refunded": amount_refunded,
        "balance_transaction": "txn_3MtHbFLkdIwHu7ix0Aq2Ct8y",
        "captured": True,
        "created": 1739264000,
        "currency": "usd",
        "customer": "cus_Buyer1",
        "invoice": None,
        "livemode": True,
        "metadata": {},
        "paid": True,
        "payment_intent": payment_intent,
        "refunded": amount_refunded >= amount,
        "status": "succeeded",
    }


def stripe_refund(
    refund_id: str, *, charge_id: str, payment_intent: str, amount: int, created: int, status: str = "succeeded"
) -> dict[str, Any]:
    """Stripe's Refund object (docs.stripe.com/api/refunds/object; stripe/openapi fixtures3.json `refund`), as
    refund.created carries it and GET /v1/refunds lists it."""
    return {
        "id": refund_id,
        "object": "refund",
        "amount": amount,
        "balance_transaction": "txn_3MtHbFLkdIwHu7ix0Aq2Ct8z",
        "charge": charge_id,
        "created": created,
        "currency": "usd",
        "metadata": {},
        "payment_intent": payment_intent,
        "reason": "requested_by_customer",
        "receipt_number": None,
        "source_transfer_reversal": None,
        "status": status,
        "transfer_reversal": None,
    }


@pytest.fixture
def refunds_server(monkeypatch, settings) -> Iterator[StripeAccount]:
    with stripe_account_serving(monkeypatch, settings, SECRET_KEY) as account:
        yield account


@pytest.fixture
def no_platform_key(refunds_server, settings) -> StripeAccount:
    settings.STRIPE_SECRET_KEY = ""
    return refunds_server


class Sale:
    """A paid, attributed 100.00 sale (commission 10.00) and the Stripe events of its refunds."""

    def __init__(self, client, program) -> None:
        customer = CustomerFactory.create(link=ReferralLinkFactory(program=program))
        session = checkout_session(amount=10000, metadata={"svc_click_id": customer.click_id})
        assert post_event(client, event("checkout.session.completed", session)).status_code == 200
        self.payment_intent = session["payment_intent"]
        self.charge_id = f"ch_3{secrets.token_hex(12)}"

    @cached_property
    def commission(self) -> Commission:
        commission = Commission.objects.get(sale__processor_event_id=self.payment_intent)
        assert commission.amount_cents == 1000
        return commission

    def refund(
        self, refund_id: str, amount: int, *, created: int = 1739350400, status: str = "succeeded"
    ) -> dict[str, Any]:
        return stripe_refund(
            refund_id,
            charge_id=self.charge_id,
            payment_intent=self.payment_intent,
            amount=amount,
            created=created,
            status=status,
        )

    def charge_refunded(self, amount_refunded: int) -> dict[str, Any]:
        charge = stripe_charge(
            charge_id=self.charge_id, payment_intent=self.payment_intent, amount=10000, amount_refunded=amount_refunded
        )
        return event("charge.refunded", charge)

    def refund_created(self, refund_id: str, amount: int, created: int = 1739350400) -> dict[str, Any]:
        return event("refund.created", self.refund(refund_id, amount, created=created))

    def clawed_back(self) -> tuple[int, int, str]:
        self.commission.refresh_from_db()
        return self.commission.deducted_cents, self.commission.sale_refunded_cents, self.commission.status


def refunds_program():
    return ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=10)


@pytest.fixture
def sale(db, client, stripe_webhook_secret, django_capture_on_commit_callbacks) -> Sale:
    with django_capture_on_commit_callbacks(execute=True):
        paid = Sale(client, refunds_program())
    assert paid.commission.status == "approved"
    return paid


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks, stripe_webhook_secret):
    def send(payload: dict[str, Any]) -> ProcessorEvent:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_event(client, payload)
        assert response.status_code == 200, response.content
        return ProcessorEvent.objects.get(event_id=payload["id"])

    return send


@pytest.mark.django_db
class TestWithThePlatformKey:
    def test_charge_refunded_then_refund_created_claws_back_once(self, sale, refunds_server, deliver):
        refunds_server.refunds.append(sale.refund(REFUND_A, 5000))
        charge = deliver(sale.charge_refunded(5000))
        assert charge.outcome == f"refunded: commission #{sale.commission.pk} reduced by 500"
        # Asked of the program's connected account, with the platform's key, by the charge's id.
        assert refunds_server.requests == [
            {
                "path": "/v1/refunds",
                "query": {"charge": sale.charge_id, "limit": "100"},
                "authorization": f"Bearer {SECRET_KEY}",
                "stripe_account": ACCOUNT,
            }
        ]
        refund = deliver(sale.refund_created(REFUND_A, 5000))
        assert refund.outcome == "refund already applied"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert (sale.commission.refund_count, sale.commission.applied_refund_ids) == (1, [REFUND_A])

    def test_a_key_stripe_refuses_applies_the_refunded_total_instead_of_failing(
        self, sale, refunds_server, deliver, settings
    ):
        # A revoked key (401 authentication_error): asking again would fail the same way, and the refund must still
        # be taken back.
        refunds_server.refunds.append(sale.refund(REFUND_A, 5000))
        settings.STRIPE_SECRET_KEY = "sk_test_revoked"
        charge = deliver(sale.charge_refunded(5000))
        assert charge.status == "processed" and charge.outcome.endswith("reduced by 500")
        assert len(refunds_server.requests) == 1
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.applied_refund_ids == [f"{sale.charge_id}:5000"]

    def test_refund_created_then_charge_refunded_claws_back_once(self, sale, refunds_server, deliver):
        refunds_server.refunds.append(sale.refund(REFUND_A, 5000))
        assert deliver(sale.refund_created(REFUND_A, 5000)).outcome.endswith("reduced by 500")
        assert deliver(sale.charge_refunded(5000)).outcome == "refund already applied"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.applied_refund_ids == [REFUND_A]

    def test_two_partial_refunds_interleaved(self, sale, refunds_server, deliver):
        # Each charge.refunded is processed when Stripe lists the refunds made by then.
        refunds_server.refunds.append(sale.refund(REFUND_A, 2500, created=1739350400))
        deliver(sale.charge_refunded(2500))
        refunds_server.refunds.append(sale.refund(REFUND_B, 2500, created=1739350500))
        deliver(sale.refund_created(REFUND_B, 2500, created=1739350500))
        assert deliver(sale.charge_refunded(5000)).outcome == "refund already applied; refund already applied"
        assert deliver(sale.refund_created(REFUND_A, 2500)).outcome == "refund already applied"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.applied_refund_ids == [REFUND_A, REFUND_B]

    @pytest.mark.parametrize("order", list(permutations(range(4))))
    def test_every_order_of_two_partial_refunds_claws_back_once(self, sale, refunds_server, deliver, order):
        refunds_server.refunds += [sale.refund(REFUND_A, 2500, created=1), sale.refund(REFUND_B, 2500, created=2)]
        events = [
            sale.charge_refunded(2500),
            sale.charge_refunded(5000),
            sale.refund_created(REFUND_A, 2500, created=1),
            sale.refund_created(REFUND_B, 2500, created=2),
        ]
        for n in order:
            assert deliver(events[n]).status == "processed"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sorted(sale.commission.applied_refund_ids) == [REFUND_A, REFUND_B]

    def test_a_redelivery_or_a_replay_applies_nothing_more(
        self, sale, refunds_server, deliver, django_capture_on_commit_callbacks
    ):
        refunds_server.refunds.append(sale.refund(REFUND_A, 5000))
        payload = sale.charge_refunded(5000)
        stored = deliver(payload)
        deliver(payload)
        assert ProcessorEvent.objects.filter(event_id=payload["id"]).count() == 1
        with django_capture_on_commit_callbacks(execute=True):
            processor_events_replay(event_pks=[stored.pk])
        stored.refresh_from_db()
        assert stored.outcome == "refund already applied"
        assert sale.clawed_back() == (500, 5000, "refunded") and sale.commission.refund_count == 1

    def test_stripe_down_the_event_fails_is_retried_and_applies_once(self, sale, refunds_server, client):
        refunds_server.refunds.append(sale.refund(REFUND_A, 5000))
        refunds_server.fail = 1
        payload = sale.charge_refunded(5000)
        assert post_event(client, payload).status_code == 200  # stored; its processing is the worker's
        stored = ProcessorEvent.objects.get(event_id=payload["id"])

        with pytest.raises(stripe.APIError):
            processor_event_attempt(event_pk=stored.pk)
        stored.refresh_from_db()
        assert (stored.status, stored.attempts) == ("failed", 1) and "An unknown error occurred" in stored.last_error
        assert sale.clawed_back() == (0, 0, "approved")

        # The task's retry, once Stripe answers: applied once, by the refund's id; another attempt changes nothing.
        assert processor_event_attempt(event_pk=stored.pk) == "processed"
        assert processor_event_attempt(event_pk=stored.pk) == "processed"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.applied_refund_ids == [REFUND_A]

    def test_every_page_is_read_and_refunds_that_take_nothing_back_are_not_applied(self, sale, refunds_server, deliver):
        refunds_server.page_size = 1
        refunds_server.refunds += [
            sale.refund("re_3Pending000000000000001", 1000, created=1, status="pending"),
            sale.refund("re_3Failed0000000000000001", 3000, created=2, status="failed"),
            sale.refund("re_3Canceled00000000000001", 3000, created=3, status="canceled"),
            sale.refund("re_3Succeeded0000000000001", 1500, created=4),
        ]
        deliver(sale.charge_refunded(2500))
        assert [r["query"].get("starting_after") for r in refunds_server.requests] == [
            None,
            "re_3Succeeded0000000000001",
            "re_3Canceled00000000000001",
            "re_3Failed0000000000000001",
        ]
        assert sale.clawed_back() == (250, 2500, "refunded")
        assert sale.commission.applied_refund_ids == ["re_3Pending000000000000001", "re_3Succeeded0000000000001"]

    def test_a_charge_first_counted_by_its_total_stays_counted_so_once_the_key_is_set(
        self, sale, refunds_server, deliver, settings
    ):
        settings.STRIPE_SECRET_KEY = ""
        deliver(sale.charge_refunded(2500))
        settings.STRIPE_SECRET_KEY = SECRET_KEY
        refunds_server.refunds += [sale.refund(REFUND_A, 2500, created=1), sale.refund(REFUND_B, 2500, created=2)]
        # Which refund the 25.00 was is not known: neither applies by its id, the new total applies the rest.
        assert deliver(sale.refund_created(REFUND_A, 2500)).outcome.startswith("counted by charge")
        assert deliver(sale.charge_refunded(5000)).outcome.endswith("reduced by 250")
        assert deliver(sale.refund_created(REFUND_B, 2500)).outcome.startswith("counted by charge")
        assert sale.clawed_back() == (500, 5000, "refunded")


@pytest.mark.django_db
class TestWithoutThePlatformKey:
    def test_charge_refunded_then_refund_created_claws_back_once(self, sale, no_platform_key, deliver):
        charge = deliver(sale.charge_refunded(5000))
        assert charge.outcome == f"refunded: commission #{sale.commission.pk} reduced by 500"
        refund = deliver(sale.refund_created(REFUND_A, 5000))
        assert refund.outcome == f"counted by charge {sale.charge_id}'s refunded total (charge.refunded)"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.applied_refund_ids == [f"{sale.charge_id}:5000"]
        assert no_platform_key.requests == []

    def test_refund_created_then_charge_refunded_claws_back_once(self, sale, no_platform_key, deliver):
        deliver(sale.refund_created(REFUND_A, 5000))
        assert deliver(sale.charge_refunded(5000)).outcome == "refund already applied"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.applied_refund_ids == [REFUND_A]

    @pytest.mark.parametrize("order", list(permutations(range(4))))
    def test_every_order_of_two_partial_refunds_claws_back_once(self, sale, no_platform_key, deliver, order):
        # charge.refunded's totals as Stripe sends them: 25.00 once REFUND_A is made, 50.00 once REFUND_B is.
        events = [
            sale.charge_refunded(2500),
            sale.charge_refunded(5000),
            sale.refund_created(REFUND_A, 2500, created=1),
            sale.refund_created(REFUND_B, 2500, created=2),
        ]
        for n in order:
            assert deliver(events[n]).status == "processed"
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert no_platform_key.requests == []

    def test_a_redelivery_or_a_replay_applies_nothing_more(
        self, sale, no_platform_key, deliver, django_capture_on_commit_callbacks
    ):
        payloads = [sale.charge_refunded(5000), sale.refund_created(REFUND_A, 5000)]
        stored = [deliver(p) for p in payloads] + [deliver(p) for p in payloads]
        with django_capture_on_commit_callbacks(execute=True):
            processor_events_replay(event_pks=[s.pk for s in stored[:2]])
        assert sale.clawed_back() == (500, 5000, "refunded") and sale.commission.refund_count == 1


def deliver_together(payloads: list[dict[str, Any]]) -> list[str]:
    """Stores the events as the webhook does, then processes them in threads at once, as two workers would."""
    program = Program.objects.get(stripe_account_id=ACCOUNT)
    pks = [
        ProcessorEvent.objects.create(
            event_id=p["id"], event_type=p["type"], account_id=ACCOUNT, program=program, livemode=True, payload=p
        ).pk
        for p in payloads
    ]
    return run_together(len(pks), lambda n: processor_event_attempt(event_pk=pks[n]))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("platform_key", [SECRET_KEY, ""], ids=["asking_stripe", "by_the_total"])
def test_both_events_at_once_claw_back_exactly_once(
    client, stripe_webhook_secret, refunds_server, settings, platform_key
):
    program = refunds_program()
    for _ in range(4):
        settings.STRIPE_SECRET_KEY = SECRET_KEY
        sale = Sale(client, program)
        refunds_server.refunds.append(sale.refund(REFUND_A, 5000))
        settings.STRIPE_SECRET_KEY = platform_key
        assert deliver_together([sale.charge_refunded(5000), sale.refund_created(REFUND_A, 5000)]) == [
            "processed",
            "processed",
        ]
        assert sale.clawed_back() == (500, 5000, "refunded")
        assert sale.commission.refund_count == 1
