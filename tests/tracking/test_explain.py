"""insight.explain: why a sale or a customer was credited as it was. Sales are made the way integrators make
them (POST /api/v1/track/sale and /refund, signed Stripe webhooks), so attributed_by is what the sale path
recorded."""

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from commissions.models import ProductCommissionRate
from core.errors import NotFoundError
from insight.explain import NOT_RECORDED, customer_explain, sale_explain
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bearer
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event
from tests.tracking.sales import REFUND_URL, post_sale, sale_body
from tracking.models import Customer, LeadEvent, ProcessorEvent, SaleEvent

pytestmark = pytest.mark.django_db


def clicked(customer: Customer, days_ago: float) -> Customer:
    at = timezone.now() - timedelta(days=days_ago)
    Customer.objects.filter(pk=customer.pk).update(first_clicked_at=at, last_clicked_at=at)
    customer.refresh_from_db()
    return customer


def statuses(explained: dict[str, Any]) -> list[tuple[str, str]]:
    return [(rule["rule"], rule["status"]) for rule in explained["attribution"]["rules"]]


class TestAnAttributedApiSale:
    def test_by_customer_key_it_names_the_rule_the_click_the_window_and_the_arithmetic(
        self, api_client, program, link, customer
    ):
        clicked(customer, days_ago=3)
        assert post_sale(api_client, program, **sale_body(amount_cents=10000)).status_code == 200

        explained = sale_explain(program=program, transaction_id="txn_1")

        assert (explained["kind"], explained["recorded"], explained["outcome"]) == ("sale", True, "commission")
        assert explained["sale"]["amount_cents"] == 10000 and explained["sale"]["is_test"] is False
        attribution = explained["attribution"]
        assert (attribution["path"], attribution["matched_rule"]) == ("api", "customer_key")
        assert statuses(explained) == [("customer_key", "matched"), ("click_id", "not_tried")]
        click = attribution["click"]
        assert click["click_id"] == customer.click_id
        assert click["link"] == {"id": link.pk, "short_link": link.short_link}
        assert click["partner"] == {"id": link.partner.pk, "name": link.partner.name}
        window = attribution["window"]
        assert window["window_days"] == 30 and window["within"] is True and window["applied"] is True
        assert 2.99 <= window["click_age_days"] <= 3.01
        assert explained["partner"] == {"id": link.partner.pk, "name": link.partner.name}

        commission = explained["commission"]
        assert commission["policy"]["source"] == "program"
        assert (commission["policy"]["commission_type"], commission["policy"]["rate"]) == ("percent", "20")
        assert commission["arithmetic"] == {
            "sale_amount_cents": 10000,
            "rate": "20",
            "computed_cents": 2000,
            "matches_commission": True,
            "text": "20% of 100.00 USD = 20.00 USD",
        }
        assert (commission["amount_cents"], commission["status"], commission["credited"]) == (2000, "pending", False)
        assert commission["hold_until"] > timezone.now() + timedelta(days=29)
        assert commission["no_commission_reason"] == ""
        assert commission["payable_cents"] == 2000
        assert commission["payable_text"] == "still pays 20.00 USD: pending, credited when its hold period ends"
        assert explained["summary"] == (
            f"Matched by customer_key; commission #{commission['id']} of 20.00 USD is pending; it still pays "
            "20.00 USD: pending, credited when its hold period ends."
        )
        assert explained["refunds"]["count"] == 0 and explained["refunds"]["steps"] == []
        assert explained["ledger"] == {"entries": [], "total_cents": 0}  # pending: nothing credited yet

    def test_by_click_id_the_customer_key_rule_found_nothing(self, api_client, program, customer):
        clicked(customer, days_ago=1)
        body = {"transaction_id": "txn_2", "amount_cents": 5000, "click_id": customer.click_id}
        assert post_sale(api_client, program, **body).status_code == 200

        explained = sale_explain(program=program, transaction_id="txn_2")

        assert explained["attribution"]["matched_rule"] == "click_id"
        assert statuses(explained) == [("customer_key", "no_match"), ("click_id", "matched")]
        assert SaleEvent.objects.get().attributed_by == "click_id"

    def test_a_product_rate_is_named_as_the_policy(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program, product_id="pro", commission_type="fixed", commission_rate=Decimal("750")
        )
        assert post_sale(api_client, program, **sale_body(product_id="pro")).status_code == 200

        commission = sale_explain(program=program, transaction_id="txn_1")["commission"]

        assert (commission["policy"]["source"], commission["policy"]["product_id"]) == ("product", "pro")
        assert commission["arithmetic"]["text"] == "fixed 750 (smallest unit) = 7.50 USD"
        assert commission["amount_cents"] == 750

    def test_a_later_sale_follows_the_customer_past_the_window(self, api_client, program, customer):
        clicked(customer, days_ago=10)
        assert post_sale(api_client, program, **sale_body(transaction_id="first")).status_code == 200
        clicked(customer, days_ago=40)  # the click is now older than the window
        assert post_sale(api_client, program, **sale_body(transaction_id="second")).status_code == 200

        window = sale_explain(program=program, transaction_id="second")["attribution"]["window"]

        assert window["applied"] is False and window["within"] is False
        assert "converted on an earlier sale" in window["text"]

    def test_a_sale_stored_before_explanations_says_the_rule_was_not_recorded(self, program, link):
        sale = SaleFactory(customer=CustomerFactory(link=link))

        explained = sale_explain(program=program, transaction_id=sale.processor_event_id)

        assert explained["attribution"]["matched_rule"] == NOT_RECORDED
        assert {rule["status"] for rule in explained["attribution"]["rules"]} == {"unknown"}

    def test_the_customer_explanation_lists_its_leads_and_sales(self, api_client, program, customer):
        LeadEvent.objects.create(program=program, customer=customer, click_id=customer.click_id, customer_key="user_1")
        assert post_sale(api_client, program, **sale_body()).status_code == 200

        explained = customer_explain(program=program, customer_key="user_1")

        assert explained == customer_explain(program=program, click_id=customer.click_id)
        assert explained["customer"]["click_id"] == customer.click_id
        assert explained["customer"]["status"] == "converted"
        assert [lead["customer_key"] for lead in explained["leads"]] == ["user_1"]
        [sale] = explained["sales"]
        assert (sale["transaction_id"], sale["attributed_by"], sale["commission"]["amount_cents"]) == (
            "txn_1",
            "customer_key",
            2000,
        )
        assert sale["explain"] == {"transaction_id": "txn_1"}
        assert explained["window"]["converted"] is True and explained["window"]["open"] is True


class TestAWindowExpiredSale:
    def test_the_refused_sale_is_explained_from_its_log_and_the_customer_says_the_click_is_past_the_window(
        self, api_client, program, customer
    ):
        clicked(customer, days_ago=31)
        response = post_sale(api_client, program, **sale_body(transaction_id="late"))
        assert response.json()["reason"] == "attribution_window_expired"
        assert not SaleEvent.objects.exists()

        explained = sale_explain(program=program, transaction_id="late")

        assert (explained["recorded"], explained["outcome"], explained["sale"]) == (
            False,
            "attribution_window_expired",
            None,
        )
        attribution = explained["attribution"]
        assert attribution["matched_rule"] == "customer_key"
        assert attribution["click"]["click_id"] == customer.click_id
        assert attribution["window"]["within"] is False and attribution["window"]["window_days"] == 30
        assert 30.99 <= attribution["window"]["click_age_days"] <= 31.01
        assert explained["commission"] is None

        by_customer = customer_explain(program=program, click_id=customer.click_id)
        assert by_customer["window"]["open"] is False and by_customer["window"]["converted"] is False
        assert "past it" in by_customer["window"]["text"]
        assert [refusal["transaction_id"] for refusal in by_customer["refused_sales"]] == ["late"]
        assert by_customer["sales"] == []


class TestAStripeSaleByEmail:
    def test_the_steps_show_email_matched(self, client, settings, django_capture_on_commit_callbacks):
        settings.STRIPE_WEBHOOK_SECRET = "whsec_test_0123456789abcdef"
        program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)
        customer = CustomerFactory(link=ReferralLinkFactory(program=program))
        LeadEvent.objects.create(
            program=program, customer=customer, click_id=customer.click_id, email="Buyer@Example.com"
        )
        session = checkout_session(amount=5000, email="buyer@example.com", customer="cus_New")
        payload = event("checkout.session.completed", session)
        with django_capture_on_commit_callbacks(execute=True):
            assert post_event(client, payload).status_code == 200
        assert "by email" in ProcessorEvent.objects.get().outcome

        explained = sale_explain(program=program, transaction_id=session["payment_intent"])

        attribution = explained["attribution"]
        assert (attribution["path"], attribution["matched_rule"]) == ("stripe", "stripe:email")
        assert statuses(explained) == [
            ("svc_click_id", "no_match"),
            ("email", "matched"),
            ("processor_customer_id", "not_tried"),
            ("client_reference_id", "not_tried"),
            ("svc_customer_key", "not_tried"),
            ("old_platform", "not_tried"),
        ]
        assert explained["processor_event"]["event_id"] == payload["id"]
        assert attribution["click"]["click_id"] == customer.click_id
        assert explained["commission"]["arithmetic"]["text"] == "20% of 50.00 USD = 10.00 USD"
        assert explained["commission"]["payable_text"] == "still pays 10.00 USD: credited"
        assert explained["commission"]["status"] == "approved"
        assert [(e["kind"], e["amount_cents"], e["running_total_cents"]) for e in explained["ledger"]["entries"]] == [
            ("credit", 1000, 1000)
        ]

    def test_an_unattributed_payment_tried_every_step(self, client, settings, django_capture_on_commit_callbacks):
        settings.STRIPE_WEBHOOK_SECRET = "whsec_test_0123456789abcdef"
        program = ProgramFactory(stripe_account_id=ACCOUNT)
        session = checkout_session(email="nobody@example.com", customer=None)
        with django_capture_on_commit_callbacks(execute=True):
            post_event(client, event("checkout.session.completed", session))

        explained = sale_explain(program=program, transaction_id=session["payment_intent"])

        assert explained["outcome"] == "unattributed" and explained["commission"] is None
        assert {status for _, status in statuses(explained)} == {"no_match"}
        assert len(explained["attribution"]["rules"]) == 6


class TestAPartlyRefundedCommission:
    def test_refund_steps_and_the_ledger_with_its_running_total(self, api_client, program, customer):
        program.hold_days = 0  # credited at once, so the refund takes its share back from the balance
        program.save()
        assert post_sale(api_client, program, **sale_body(amount_cents=10000)).status_code == 200
        for refund_id, amount in (("re_1", 3000), ("re_2", 1000)):
            response = api_client.post(
                REFUND_URL,
                {"transaction_id": "txn_1", "refund_amount_cents": amount, "refund_id": refund_id},
                format="json",
                **bearer(program.raw_api_key),
            )
            assert response.status_code == 200, response.content

        explained = sale_explain(program=program, transaction_id="txn_1")

        refunds = explained["refunds"]
        assert (refunds["count"], refunds["sale_refunded_cents"], refunds["deducted_cents"]) == (2, 4000, 800)
        assert refunds["refund_ids"] == ["re_1", "re_2"]
        assert [(s["step"], s["reversed"], s["was_paid_out"]) for s in refunds["steps"]] == [
            (1, False, False),
            (2, False, False),
        ]
        assert refunds["text"] == (
            "40.00 USD of 100.00 USD refunded: the commission's share is 20.00 USD × 40.00 USD / 100.00 USD rounded "
            "half up = 8.00 USD; the commission still pays 12.00 USD: 20.00 USD less 8.00 USD taken back by refunds"
        )
        assert [(e["kind"], e["amount_cents"], e["running_total_cents"]) for e in explained["ledger"]["entries"]] == [
            ("credit", 2000, 2000),
            ("deduction", -600, 1400),
            ("deduction", -200, 1200),
        ]
        assert explained["ledger"]["total_cents"] == 1200
        assert explained["commission"]["status"] == "refunded"
        assert (explained["commission"]["payable_cents"], explained["commission"]["payable_text"]) == (
            1200,
            "still pays 12.00 USD: 20.00 USD less 8.00 USD taken back by refunds",
        )


class TestNotFound:
    def test_an_unknown_transaction_or_customer(self, program, customer):
        with pytest.raises(NotFoundError):
            sale_explain(program=program, transaction_id="nope")
        with pytest.raises(NotFoundError):
            customer_explain(program=program, click_id="nope")
        with pytest.raises(NotFoundError):
            customer_explain(program=program, customer_key="nobody")

    def test_another_programs_sale_and_customer_are_not_found(self, program, link):
        other = SaleFactory()
        with pytest.raises(NotFoundError):
            sale_explain(program=program, transaction_id=other.processor_event_id)
        with pytest.raises(NotFoundError):
            customer_explain(program=program, click_id=other.customer.click_id)
