"""POST /api/v1/track/sale: which customer and partner a sale is attributed to, when it is not, and the
attribution window."""

from datetime import timedelta
from typing import Any

import pytest

from commissions.models import Commission
from core import messages
from programs.models import PartnerProgram
from tests.factories import CustomerFactory, ReferralLinkFactory
from tests.helpers import bad_request
from tests.tracking.sales import metrics, nothing_recorded, post_sale, sale_body
from tracking.models import SaleEvent, TrackingLog

pytestmark = pytest.mark.django_db


class TestAttribution:
    def test_it_finds_the_customer_by_customer_key(self, api_client, program, link, customer):
        response = post_sale(api_client, program, transaction_id="t1", amount_cents=5000, customer_key="user_1")
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        assert (sale.customer_id, sale.partner_id) == (customer.pk, link.partner_id)
        assert Commission.objects.get().partner_id == link.partner_id

    def test_it_finds_the_customer_by_click_id(self, api_client, program, customer):
        response = post_sale(api_client, program, transaction_id="t1", amount_cents=5000, click_id=customer.click_id)
        assert response.status_code == 200
        assert SaleEvent.objects.get().customer_id == customer.pk

    def test_customer_key_wins_over_click_id(self, api_client, program, customer):
        other = CustomerFactory(link=ReferralLinkFactory(program=program))
        post_sale(api_client, program, **sale_body(click_id=other.click_id))
        sale = SaleEvent.objects.get()
        assert sale.customer_id == customer.pk
        assert sale.click_id == customer.click_id

    def test_an_unknown_customer_key_falls_back_to_click_id(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(customer_key="not_saved_yet", click_id=customer.click_id))
        assert response.status_code == 200
        assert SaleEvent.objects.get().customer_id == customer.pk

    def test_the_earliest_customer_with_the_key_keeps_the_attribution(self, api_client, program, customer):
        later = CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
        post_sale(api_client, program, **sale_body())
        sale = SaleEvent.objects.get()
        assert sale.customer_id == customer.pk
        assert sale.partner_id != later.first_partner_id

    def test_customer_key_is_looked_up_within_the_keys_program_only(self, api_client, program, customer):
        CustomerFactory(link=ReferralLinkFactory(), customer_key="user_9")  # earlier, in another program
        mine = CustomerFactory(link=customer.first_link, customer_key="user_9")
        post_sale(api_client, program, **sale_body(customer_key="user_9"))
        assert SaleEvent.objects.get().customer_id == mine.pk


class TestNoAttribution:
    @pytest.mark.parametrize(
        "ids",
        [
            {"customer_key": "nobody"},
            {"click_id": "cust_unknown"},
            {"customer_key": "nobody", "click_id": "cust_x"},
            {},
        ],
        ids=["unknown-key", "unknown-click", "both-unknown", "neither-sent"],
    )
    def test_no_customer_is_400_and_stores_nothing(self, api_client, program, customer, ids):
        response = post_sale(api_client, program, transaction_id="t1", amount_cents=5000, **ids)
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_CUSTOMER_NOT_FOUND, code="no_attribution")
        assert nothing_recorded()

    def test_a_customer_key_of_another_program_is_not_found(self, api_client, program):
        CustomerFactory(link=ReferralLinkFactory(), customer_key="user_elsewhere")
        response = post_sale(api_client, program, **sale_body(customer_key="user_elsewhere"))
        assert response.json() == bad_request(messages.SALE_CUSTOMER_NOT_FOUND, code="no_attribution")
        assert nothing_recorded()

    def test_a_click_id_of_another_programs_customer_is_refused(self, api_client, program):
        elsewhere = CustomerFactory(link=ReferralLinkFactory())
        response = post_sale(api_client, program, transaction_id="t1", amount_cents=5000, click_id=elsewhere.click_id)
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_NO_ATTRIBUTION, code="no_attribution")
        assert nothing_recorded()

    def test_a_first_partner_not_enrolled_in_the_program_is_refused(self, api_client, program, link, customer):
        PartnerProgram.objects.filter(partner=link.partner, program=program).delete()
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_NO_PARTNER_PROGRAM, code="no_attribution")
        assert nothing_recorded()

    def test_a_refusal_is_logged_for_support(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body(customer_key="nobody"))
        log = TrackingLog.objects.get()
        assert (log.program_id, log.event, log.outcome, log.is_test) == (
            program.pk,
            "sale",
            "no_attribution",
            False,
        )

    def test_a_customer_without_partner_stores_the_sale_and_answers_partner_required(self, api_client, program, link):
        CustomerFactory(link=link, first_partner=None, customer_key="orphan")
        response = post_sale(api_client, program, **sale_body(customer_key="orphan"))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_PARTNER_REQUIRED, code="no_attribution")
        sale = SaleEvent.objects.get()
        assert sale.partner_id is None and sale.attributed is False
        assert not Commission.objects.exists()
        resend = post_sale(api_client, program, **sale_body(customer_key="orphan"))
        assert resend.status_code == 409
        assert resend.json()["error"]["details"] == {"sale_id": sale.pk}


class TestAttributionWindow:
    def expired_body(self, program, age_days: float) -> dict[str, Any]:
        return {
            "success": True,
            "attributed": False,
            "reason": "attribution_window_expired",
            "click_age_days": age_days,
            "window_days": program.cookie_duration,
            "sale_id": None,
            "commission_id": None,
        }

    def test_a_sale_after_the_window_is_answered_unattributed_and_stores_nothing(
        self, api_client, program, customer, time_machine
    ):
        time_machine.move_to(customer.last_clicked_at + timedelta(days=31), tick=False)
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 200
        assert response.json() == self.expired_body(program, 31.0)
        assert nothing_recorded()
        assert metrics(customer.first_link) == (0, 0)
        customer.refresh_from_db()
        assert customer.first_sale_at is None

    def test_the_window_is_the_programs_cookie_duration(self, api_client, link, time_machine):
        program = link.program
        program.cookie_duration = 7
        program.save()
        customer = CustomerFactory(link=link, customer_key="user_1")
        time_machine.move_to(customer.last_clicked_at + timedelta(days=7, hours=12), tick=False)
        response = post_sale(api_client, program, **sale_body())
        assert response.json() == self.expired_body(program, 7.5)

    def test_a_sale_on_the_last_day_of_the_window_is_attributed(self, api_client, program, customer, time_machine):
        time_machine.move_to(customer.last_clicked_at + timedelta(days=30), tick=False)
        response = post_sale(api_client, program, **sale_body())
        assert response.json()["commission_id"] == Commission.objects.get().pk

    def test_it_runs_from_the_latest_click(self, api_client, program, customer, time_machine):
        start = customer.last_clicked_at
        customer.first_clicked_at = start - timedelta(days=90)
        customer.save()
        time_machine.move_to(start + timedelta(days=29), tick=False)
        assert post_sale(api_client, program, **sale_body()).json()["success"] is True
        assert Commission.objects.count() == 1

    def test_an_expired_sale_can_be_resent_and_is_not_a_duplicate(self, api_client, program, customer, time_machine):
        time_machine.move_to(customer.last_clicked_at + timedelta(days=40), tick=False)
        post_sale(api_client, program, **sale_body())
        again = post_sale(api_client, program, **sale_body())
        assert again.status_code == 200
        assert again.json()["reason"] == "attribution_window_expired"

    def test_occurred_at_inside_the_window_does_not_save_a_late_sale(self, api_client, program, customer, time_machine):
        clicked = customer.last_clicked_at
        time_machine.move_to(clicked + timedelta(days=35), tick=False)
        occurred = clicked + timedelta(days=10)  # 25 days ago: a valid occurred_at, inside the window
        response = post_sale(api_client, program, **sale_body(occurred_at=occurred.isoformat()))
        assert response.json() == self.expired_body(program, 35.0)
        assert nothing_recorded()

    def test_occurred_at_before_the_click_does_not_refuse_a_timely_sale(
        self, api_client, program, customer, time_machine
    ):
        clicked = customer.last_clicked_at
        time_machine.move_to(clicked + timedelta(days=5), tick=False)
        occurred = clicked - timedelta(days=20)
        response = post_sale(api_client, program, **sale_body(occurred_at=occurred.isoformat()))
        assert response.status_code == 200
        assert response.json()["commission_id"] is not None
        assert SaleEvent.objects.get().occurred_at == occurred

    def test_the_window_no_longer_applies_after_the_first_sale(self, api_client, link, time_machine):
        program = link.program
        program.commission_type = "recurring_percent"
        program.save()
        customer = CustomerFactory(link=link, customer_key="user_1")
        time_machine.move_to(customer.last_clicked_at + timedelta(days=1), tick=False)
        post_sale(api_client, program, **sale_body(transaction_id="inv_1"))
        time_machine.move_to(customer.last_clicked_at + timedelta(days=200), tick=False)
        renewal = post_sale(api_client, program, **sale_body(transaction_id="inv_2"))
        assert renewal.status_code == 200
        assert renewal.json()["commission_id"] is not None
        assert Commission.objects.count() == 2
