"""tracking.attribution is the one window rule: the sale service's verdict and the explanation's agree at the
boundary (a click exactly window days old is within it; a minute past it, which reads 30.0 days once rounded, is
not; a day past it is not)."""

from datetime import timedelta

import pytest

from insight.explain import customer_explain, sale_explain
from tests.tracking.sales import post_sale, sale_body
from tracking.attribution import attribution_window
from tracking.models import Customer, SaleEvent

pytestmark = pytest.mark.django_db


def at_age(time_machine, customer: Customer, age: timedelta) -> None:
    time_machine.move_to(customer.last_clicked_at + age, tick=False)


class TestTheBoundary:
    def test_a_click_exactly_window_days_old_is_within_for_both(self, api_client, program, customer, time_machine):
        at_age(time_machine, customer, timedelta(days=30))
        assert customer_explain(program=program, click_id=customer.click_id)["window"]["open"] is True

        assert post_sale(api_client, program, **sale_body()).status_code == 200

        window = sale_explain(program=program, transaction_id="txn_1")["attribution"]["window"]
        assert (window["within"], window["applied"], window["click_age_days"]) == (True, True, 30.0)

    @pytest.mark.parametrize("past", [timedelta(minutes=1), timedelta(days=1)])
    def test_past_the_window_both_refuse(self, api_client, program, customer, time_machine, past):
        at_age(time_machine, customer, timedelta(days=30) + past)
        assert customer_explain(program=program, click_id=customer.click_id)["window"]["open"] is False

        response = post_sale(api_client, program, **sale_body(transaction_id="late"))

        assert response.json()["reason"] == "attribution_window_expired"
        assert not SaleEvent.objects.exists()
        assert sale_explain(program=program, transaction_id="late")["attribution"]["window"]["within"] is False


class TestTheRule:
    def test_the_window_applies_to_the_converting_sale_only(self, program, customer):
        clicked = customer.last_clicked_at
        sale_at = clicked + timedelta(days=40)

        def verdict(first_sale_at):
            return attribution_window(program=program, clicked_at=clicked, sale_at=sale_at, first_sale_at=first_sale_at)

        assert verdict(None).refused is True
        assert verdict(sale_at).refused is True  # asked after the fact: this sale converted the customer
        assert verdict(sale_at - timedelta(days=1)).refused is False  # an earlier sale converted them
        assert verdict(None).within is False and verdict(None).age_days == 40.0
