"""The tracking services answer typed results carrying the rows they wrote (tracking/api/results.py renders
them); their callers read those rows instead of querying them again."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from commissions.models import Commission
from commissions.services import RefundOutcome, refund_apply
from core import messages
from programs.models import ProgramKey
from tests.factories import CustomerFactory
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event
from tracking.models import ClickEvent, Customer, LeadEvent, ProcessorEvent, SaleEvent
from tracking.services.click import ClickContext, ClickRecorded, click_record
from tracking.services.common import TestEventRecorded
from tracking.services.lead import LeadRecorded, lead_record
from tracking.services.sale import SaleRecorded, SaleWindowExpired, sale_record
from tracking.services.verification import synthetic_event_send

pytestmark = pytest.mark.django_db


def key_of(program, mode=ProgramKey.Mode.LIVE) -> ProgramKey:
    return ProgramKey.objects.select_related("program").get(program=program, mode=mode)


def context(key=None) -> ClickContext:
    return ClickContext(key=key, request_ip="127.0.0.1", request_user_agent="UA")


SALE = {"transaction_id": "txn_1", "amount_cents": 10000, "customer_key": "user_1"}


def sale_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].startswith("SELECT") and 'FROM "tracking_saleevent"' in q["sql"]]


class TestClick:
    def test_it_answers_the_customer_and_the_click_it_recorded(self, link):
        result = click_record(data={"affiliate_url": f"https://shop.test/?aff={link.short_link}"}, context=context())
        assert result == ClickRecorded(
            click_id=Customer.objects.get().click_id,
            partner_code=link.short_link,
            cookie_window_days=link.program.cookie_window_days,
            customer=Customer.objects.get(),
            click_event=ClickEvent.objects.get(),
        )

    def test_a_test_click_answers_its_event_and_test_customer(self, link):
        result = click_record(
            data={"affiliate_url": f"https://shop.test/?aff={link.short_link}", "additional_data": {"test_mode": True}},
            context=context(),
        )
        event = ClickEvent.objects.get()
        assert result == TestEventRecorded(
            event=event, message=messages.CLICK_TEST_RECORDED, click_id=Customer.objects.get(is_test=True).click_id
        )
        assert (result.event_id, result.program_id) == (event.pk, link.program_id)


class TestLead:
    def test_it_answers_the_lead_it_settled(self, link):
        customer = Customer.objects.create(
            program=link.program,
            click_id="cust_lead",
            first_partner=link.partner,
            first_link=link,
            customer_status="click",
        )
        result = lead_record(data={"click_id": "cust_lead", "customer_key": "u1"}, key=key_of(link.program))
        assert result == LeadRecorded(lead=LeadEvent.objects.get(), click_id=customer.click_id, provisional=False)


class TestSale:
    def test_it_answers_the_sale_and_its_commission(self, program, customer):
        result = sale_record(data=SALE, key=key_of(program))
        assert result == SaleRecorded(
            sale=SaleEvent.objects.get(), commission=Commission.objects.get(), message=messages.SALE_RECORDED
        )

    def test_past_the_window_it_answers_the_window_facts(self, program, customer, time_machine):
        time_machine.move_to(customer.last_clicked_at + timedelta(days=31), tick=False)
        result = sale_record(data=SALE, key=key_of(program))
        assert result == SaleWindowExpired(click_age_days=31.0, window_days=program.cookie_duration)


class TestRefund:
    def test_it_answers_the_outcome_for_the_commission(self, program, customer):
        sale_record(data=SALE, key=key_of(program))
        commission = Commission.objects.get()
        result = refund_apply(sale=SaleEvent.objects.get(), amount=None, refund_id=None, reason="")
        assert result == RefundOutcome(
            status="reversed", commission_id=commission.pk, deduction=commission.amount_cents
        )


class TestNoReadBack:
    def test_a_synthetic_sale_reports_its_attribution_without_reading_the_sale_back(self, program):
        with CaptureQueriesContext(connection) as captured:
            result = synthetic_event_send(program=program, event_type="sale")
        sale = SaleEvent.objects.get()
        assert (result["event_id"], result["attributed"], result["click_id"]) == (sale.pk, False, None)
        assert sale_reads(captured.captured_queries) == []


@pytest.mark.usefixtures("stripe_webhook_secret")
class TestStripeNoReadBack:
    def test_an_attributed_payment_links_the_sale_it_recorded_without_reading_it_back(
        self, client, link, django_capture_on_commit_callbacks
    ):
        link.program.stripe_account_id = ACCOUNT
        link.program.save(update_fields=["stripe_account_id"])
        customer = CustomerFactory(link=link)
        payload = event("checkout.session.completed", checkout_session(metadata={"svc_click_id": customer.click_id}))
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            assert post_event(client, payload).status_code == 200
        stored = ProcessorEvent.objects.get(event_id=payload["id"])
        assert stored.sale == SaleEvent.objects.get() and "attributed by svc_click_id" in stored.outcome
        assert sale_reads(captured.captured_queries) == []
