from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from commissions.models import Commission
from core import messages
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.stripe_payloads import (
    ACCOUNT,
    charge_refunded,
    checkout_session,
    event,
    invoice,
    post_event,
)
from tracking.models import Customer, LeadEvent, ProcessorEvent, SaleEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stripe_webhook_secret")]


@pytest.fixture
def program():
    return ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks):
    def send(payload: dict) -> ProcessorEvent:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_event(client, payload)
        assert response.status_code == 200, response.content
        return ProcessorEvent.objects.get(event_id=payload["id"])

    return send


def customer_of(link, **fields) -> Customer:
    return CustomerFactory.create(link=link, **fields)


class TestCheckout:
    def test_a_paid_one_time_checkout_records_the_sale_and_its_commission(self, deliver, link):
        customer = customer_of(link)
        session = checkout_session(amount=5000, metadata={"svc_click_id": customer.click_id}, customer="cus_X")
        stored = deliver(event("checkout.session.completed", session))
        assert stored.status == "processed" and "attributed by svc_click_id" in stored.outcome
        sale = SaleEvent.objects.get()
        assert (sale.processor_event_id, sale.amount_cents, sale.currency, sale.provider) == (
            session["payment_intent"],
            5000,
            "USD",
            "stripe",
        )
        assert sale.customer == customer and stored.sale == sale
        assert Commission.objects.get(sale=sale).amount_cents == 1000
        customer.refresh_from_db()
        assert customer.processor_customer_id == "cus_X" and customer.customer_status == "converted"

    def test_a_subscription_checkout_records_no_sale(self, deliver, link):
        customer = customer_of(link)
        stored = deliver(
            event(
                "checkout.session.completed",
                checkout_session(mode="subscription", metadata={"svc_click_id": customer.click_id}),
            )
        )
        assert stored.status == "ignored" and not SaleEvent.objects.exists()

    def test_an_unattributable_payment_is_recorded_as_such_without_commission(self, deliver, link):
        stored = deliver(
            event("checkout.session.completed", checkout_session(email="nobody@example.com", customer=None))
        )
        sale = SaleEvent.objects.get()
        assert not sale.attributed and sale.customer is None and sale.partner is None
        assert not Commission.objects.exists() and "unattributed" in stored.outcome

    def test_an_unsupported_currency_is_ignored(self, deliver, link):
        customer = customer_of(link)
        stored = deliver(
            event(
                "checkout.session.completed",
                checkout_session(currency="gbp", metadata={"svc_click_id": customer.click_id}),
            )
        )
        assert stored.status == "ignored" and stored.outcome == "currency GBP is not supported"
        assert not SaleEvent.objects.exists()

    def test_a_test_mode_event_records_a_test_sale_without_commission(self, deliver, link):
        customer = customer_of(link)
        deliver(
            event(
                "checkout.session.completed",
                checkout_session(metadata={"svc_click_id": customer.click_id}),
                livemode=False,
            )
        )
        assert SaleEvent.objects.get().is_test and not Commission.objects.exists()


class TestAttributionOrder:
    def test_the_click_id_in_metadata_comes_first(self, deliver, link):
        by_click = customer_of(link)
        by_email = customer_of(link, email="buyer@example.com")
        deliver(
            event(
                "checkout.session.completed",
                checkout_session(metadata={"svc_click_id": by_click.click_id}, email="buyer@example.com"),
            )
        )
        assert SaleEvent.objects.get().customer == by_click != by_email

    def test_then_the_email_against_the_lead_record(self, deliver, link):
        customer = customer_of(link, customer_status="lead")
        LeadEvent.objects.create(
            program=customer.program, customer=customer, click_id=customer.click_id, email="Buyer@Example.com"
        )
        stored = deliver(event("checkout.session.completed", checkout_session(email="buyer@example.com")))
        assert SaleEvent.objects.get().customer == customer and "by email" in stored.outcome

    def test_then_the_saved_processor_customer_id(self, deliver, link):
        customer = customer_of(link, processor_customer_id="cus_Known")
        stored = deliver(
            event("checkout.session.completed", checkout_session(email="other@example.com", customer="cus_Known"))
        )
        assert SaleEvent.objects.get().customer == customer and "processor_customer_id" in stored.outcome

    def test_client_reference_id_counts_only_when_metadata_has_no_click(self, deliver, link):
        referenced = customer_of(link)
        deliver(
            event(
                "checkout.session.completed",
                checkout_session(client_reference_id=referenced.click_id, email="x@example.com", customer=None),
            )
        )
        assert SaleEvent.objects.get().customer == referenced

    def test_client_reference_id_is_not_used_when_metadata_names_a_click(self, deliver, link):
        referenced = customer_of(link)
        deliver(
            event(
                "checkout.session.completed",
                checkout_session(
                    client_reference_id=referenced.click_id,
                    metadata={"svc_click_id": "cust_unknown"},
                    email="x@example.com",
                    customer=None,
                ),
            )
        )
        assert SaleEvent.objects.get().customer is None

    def test_last_the_customer_key_alone(self, deliver, link):
        customer = customer_of(link, customer_key="user-42", customer_status="lead")
        stored = deliver(
            event(
                "checkout.session.completed",
                checkout_session(metadata={"svc_customer_key": "user-42"}, email="z@example.com", customer=None),
            )
        )
        assert SaleEvent.objects.get().customer == customer and "svc_customer_key" in stored.outcome

    def test_metadata_for_another_program_is_not_used(self, deliver, link):
        customer = customer_of(link)
        deliver(
            event(
                "checkout.session.completed",
                checkout_session(
                    metadata={"svc_click_id": customer.click_id, "program_id": "999999"},
                    email="z@example.com",
                    customer=None,
                ),
            )
        )
        assert SaleEvent.objects.get().customer is None

    def test_a_provisional_lead_settles_on_the_payment(self, deliver, link, program):
        program.lead_auth = "server_required"
        program.save()
        customer = customer_of(link)
        LeadEvent.objects.create(
            program=program, customer=customer, click_id=customer.click_id, customer_key="user-7", provisional=True
        )
        deliver(event("checkout.session.completed", checkout_session(metadata={"svc_click_id": customer.click_id})))
        customer.refresh_from_db()
        assert customer.customer_key == "user-7" and customer.customer_status == "converted"
        assert not LeadEvent.objects.filter(provisional=True).exists()


class TestSubscriptions:
    def test_the_first_invoice_and_every_renewal_are_sales(self, deliver, link, program):
        program.commission_type = "recurring_percent"
        program.save()
        customer = customer_of(link)
        first = invoice(amount=2000, metadata={"svc_click_id": customer.click_id}, customer="cus_Sub")
        deliver(event("invoice.payment_succeeded", first))
        # Renewals carry no click metadata: the saved Stripe customer id finds the customer.
        renewal = invoice(
            amount=2000,
            metadata={},
            customer="cus_Sub",
            email="changed@example.com",
            billing_reason="subscription_cycle",
        )
        stored = deliver(event("invoice.payment_succeeded", renewal))
        sales = list(SaleEvent.objects.order_by("pk"))
        assert [s.customer for s in sales] == [customer, customer]
        assert [s.is_recurring for s in sales] == [False, True]
        assert all(s.sale_type == "subscription" and s.subscription_interval == "monthly" for s in sales)
        assert Commission.objects.count() == 2 and "processor_customer_id" in stored.outcome

    def test_a_renewal_on_a_one_off_program_is_a_sale_without_commission(self, deliver, link, program):
        assert program.commission_type == "percent"
        customer = customer_of(link)
        deliver(
            event("invoice.payment_succeeded", invoice(metadata={"svc_click_id": customer.click_id}, customer="cus_P"))
        )
        renewal = invoice(metadata={}, customer="cus_P", billing_reason="subscription_cycle")
        stored = deliver(event("invoice.payment_succeeded", renewal))
        sale = SaleEvent.objects.get(is_recurring=True)
        assert stored.status == "processed" and stored.sale == sale
        assert messages.SALE_RECORDED_RENEWAL_NOT_PAID in stored.outcome
        assert sale.no_commission_reason == "renewal_not_recurring"
        assert Commission.objects.count() == 1 and Commission.objects.get().sale.is_recurring is False

    def test_a_repeat_one_off_payment_earns_a_commission_as_the_sale_endpoint_does(self, deliver, link):
        customer = customer_of(link)
        for n in range(2):
            session = checkout_session(metadata={"svc_click_id": customer.click_id}, payment_intent=f"pi_repeat_{n}")
            deliver(event("checkout.session.completed", session))
        assert Commission.objects.filter(sale__customer=customer).count() == 2

    def test_the_metadata_is_read_from_the_subscription(self, deliver, link):
        customer = customer_of(link)
        payload = invoice(metadata={}, customer="cus_New", email="new@example.com")
        payload["subscription_details"] = None
        payload["parent"] = {
            "subscription_details": {"subscription": "sub_X", "metadata": {"svc_click_id": customer.click_id}}
        }
        deliver(event("invoice.payment_succeeded", payload))
        assert SaleEvent.objects.get().customer == customer

    def test_an_invoice_without_subscription_is_ignored(self, deliver, link):
        payload = invoice()
        payload["subscription"] = None
        payload["subscription_details"] = None
        assert deliver(event("invoice.payment_succeeded", payload)).status == "ignored"


class TestRefunds:
    def paid(self, deliver, link, amount=10000):
        customer = customer_of(link)
        session = checkout_session(amount=amount, metadata={"svc_click_id": customer.click_id})
        deliver(event("checkout.session.completed", session))
        return session["payment_intent"], Commission.objects.get()

    def test_a_refund_event_reverses_through_the_refund_logic(self, deliver, link):
        payment_intent, commission = self.paid(deliver, link)
        stored = deliver(
            event(
                "charge.refunded",
                charge_refunded(payment_intent=payment_intent, amount=10000, refunds=[("re_1", 10000)]),
            )
        )
        commission.refresh_from_db()
        assert commission.status == "reversed" and commission.applied_refund_ids == ["re_1"]
        assert stored.outcome.startswith("reversed")

    def test_partial_refunds_use_the_stripe_refund_id_and_apply_once(self, deliver, link):
        payment_intent, commission = self.paid(deliver, link)
        deliver(
            event(
                "charge.refunded",
                charge_refunded(payment_intent=payment_intent, amount=10000, refunds=[("re_1", 2500)]),
            )
        )
        # Stripe lists every refund of the charge again on the next event.
        deliver(
            event(
                "charge.refunded",
                charge_refunded(payment_intent=payment_intent, amount=10000, refunds=[("re_1", 2500), ("re_2", 2500)]),
            )
        )
        deliver(
            event(
                "refund.created",
                {
                    "id": "re_2",
                    "object": "refund",
                    "amount": 2500,
                    "payment_intent": payment_intent,
                    "status": "succeeded",
                },
            )
        )
        commission.refresh_from_db()
        assert commission.status == "refunded" and commission.sale_refunded_cents == 5000
        assert commission.applied_refund_ids == ["re_1", "re_2"] and commission.deducted_cents == 1000

    def test_without_the_refund_list_the_new_refunded_amount_is_applied(self, deliver, link):
        payment_intent, commission = self.paid(deliver, link)
        deliver(
            event(
                "charge.refunded",
                charge_refunded(payment_intent=payment_intent, amount=10000, refunds=None, amount_refunded=4000),
            )
        )
        deliver(
            event(
                "charge.refunded",
                charge_refunded(payment_intent=payment_intent, amount=10000, refunds=None, amount_refunded=4000),
            )
        )
        commission.refresh_from_db()
        assert commission.sale_refunded_cents == 4000 and commission.refund_count == 1

    def test_a_refund_for_an_unknown_payment_is_ignored(self, deliver, link):
        stored = deliver(
            event("charge.refunded", charge_refunded(payment_intent="pi_unknown", amount=100, refunds=[("re_x", 100)]))
        )
        assert stored.status == "ignored"


class TestBothWays:
    def test_the_api_first_then_the_event_is_stored_once(self, deliver, link, program):
        customer = customer_of(link, customer_key="u1", customer_status="lead")
        api = APIClient().post(
            "/api/v1/track/sale",
            {"transaction_id": "pi_shared", "amount_cents": 5000, "customer_key": "u1"},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}",
        )
        assert api.status_code == 200
        stored = deliver(
            event(
                "checkout.session.completed",
                checkout_session(payment_intent="pi_shared", metadata={"svc_click_id": customer.click_id}),
            )
        )
        assert stored.outcome == f"already recorded as sale #{api.json()['sale_id']}"
        assert SaleEvent.objects.count() == 1 and Commission.objects.count() == 1

    def test_the_event_first_then_the_api_answers_409(self, deliver, link, program):
        customer = customer_of(link, customer_key="u1", customer_status="lead")
        deliver(
            event(
                "checkout.session.completed",
                checkout_session(payment_intent="pi_shared", metadata={"svc_click_id": customer.click_id}),
            )
        )
        api = APIClient().post(
            "/api/v1/track/sale",
            {"transaction_id": "pi_shared", "amount_cents": 5000, "customer_key": "u1"},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}",
        )
        assert api.status_code == 409 and api.json()["error"]["details"]["sale_id"] == SaleEvent.objects.get().pk


class TestFailures:
    def test_a_failed_event_is_marked_retried_and_then_processed(self, deliver, link, monkeypatch):
        from tracking.stripe import events

        customer = customer_of(link)
        real = events.handle_checkout_completed
        calls = {"n": 0}

        def flaky(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("database hiccup")
            return real(*args, **kwargs)

        monkeypatch.setitem(events.HANDLERS, "checkout.session.completed", flaky)
        stored = deliver(
            event("checkout.session.completed", checkout_session(metadata={"svc_click_id": customer.click_id}))
        )
        assert stored.status == "processed" and stored.attempts == 2 and SaleEvent.objects.count() == 1

    def test_the_admin_replays_an_event(self, client, deliver, link, django_capture_on_commit_callbacks):
        from django.contrib.auth import get_user_model

        customer = customer_of(link)
        stored = deliver(
            event("checkout.session.completed", checkout_session(metadata={"svc_click_id": customer.click_id}))
        )
        ProcessorEvent.objects.filter(pk=stored.pk).update(status="failed")
        admin = get_user_model().objects.create_superuser("ops", "ops@example.com", "pass-word-123")
        client.force_login(admin)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/admin/tracking/processorevent/", {"action": "replay", "_selected_action": [stored.pk]}
            )
        assert response.status_code == 302
        stored.refresh_from_db()
        assert stored.status == "processed" and SaleEvent.objects.count() == 1  # replay never counts twice


def test_the_attribution_window_applies_to_processor_sales(deliver, link):
    customer = customer_of(link, last_clicked_at=timezone.now() - timedelta(days=31))
    stored = deliver(
        event("checkout.session.completed", checkout_session(metadata={"svc_click_id": customer.click_id}))
    )
    assert stored.outcome == "attribution window expired (nothing recorded)" and not SaleEvent.objects.exists()
