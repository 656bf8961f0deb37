"""Explain says in money, with the currency's own decimals, what a commission still pays in every state (GET
/api/v1/cli/explain, the body `svc explain` and the page read): a pending commission partly refunded is cancelled
whole and pays nothing, while the spec's refund answer keeps its informational deductionAmount."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.services import commission_hold, commission_void, withdrawal_mark_paid, withdrawal_request
from tests.contract.schema import assert_documented, published_schema
from tests.helpers import bearer
from tests.tracking.sales import REFUND_URL, post_sale, sale_body

pytestmark = pytest.mark.django_db

EXPLAIN = "/api/v1/cli/explain"


def explained(api_client, program, transaction_id: str = "txn_1") -> dict[str, Any]:
    response = api_client.get(EXPLAIN, {"transaction_id": transaction_id}, **bearer(program.raw_api_key))
    assert response.status_code == 200, response.content
    # The new fields are in the published description (its objects closed: an undocumented key fails).
    assert_documented(published_schema(), EXPLAIN, "get", response)
    return response.json()["data"]


def refund(api_client, program, amount: int | None = None) -> dict[str, Any]:
    body = {"transaction_id": "txn_1", **({"refund_amount_cents": amount} if amount else {})}
    response = api_client.post(REFUND_URL, body, format="json", **bearer(program.raw_api_key))
    assert response.status_code == 200, response.content
    return response.json()


def sold(api_client, program, **overrides) -> int:
    response = post_sale(api_client, program, **sale_body(**overrides))
    assert response.status_code == 200, response.content
    return response.json()["commission_id"]


class TestStillPays:
    def test_a_pending_commission_partly_refunded_pays_nothing_and_explain_says_so(self, api_client, program, customer):
        commission_id = sold(api_client, program, amount_cents=9800)

        answer = refund(api_client, program, amount=4900)

        # The spec's answer is unchanged: its deductionAmount is the refunded share, informational here.
        assert (answer["status"], answer["deductionAmount"]) == ("refunded", 980)
        data = explained(api_client, program)
        commission = data["commission"]
        assert (commission["status"], commission["payable_cents"]) == ("refunded", 0)
        said = "still pays 0.00 USD: a refund cancels a pending commission whole"
        assert commission["payable_text"] == said
        assert (
            data["summary"]
            == f"Matched by customer_key; commission #{commission_id} of 19.60 USD is refunded; it {said}."
        )
        assert data["refunds"]["text"] == (
            "49.00 USD of 98.00 USD refunded: the commission's share is 19.60 USD × 49.00 USD / 98.00 USD rounded "
            f"half up = 9.80 USD (never credited, so nothing was taken from the balance); the commission {said}"
        )
        # JSON keeps the integers.
        assert (data["refunds"]["deducted_cents"], commission["amount_cents"]) == (980, 1960)

    def test_a_credited_commission_partly_refunded_pays_the_rest(self, api_client, program, customer):
        commission_id = sold(api_client, program, amount_cents=10000)
        assert commission_approve(commission_id=commission_id, now=timezone.now() + timedelta(days=31))
        assert refund(api_client, program, amount=2500)["deductionAmount"] == 500

        commission = explained(api_client, program)["commission"]

        assert (commission["payable_cents"], commission["payable_text"]) == (
            1500,
            "still pays 15.00 USD: 20.00 USD less 5.00 USD taken back by refunds",
        )

    def test_a_full_refund_reverses_it(self, api_client, program, customer):
        sold(api_client, program)
        assert refund(api_client, program)["status"] == "reversed"

        commission = explained(api_client, program)["commission"]

        assert (commission["payable_cents"], commission["payable_text"]) == (
            0,
            "still pays 0.00 USD: the sale was refunded in full",
        )

    def test_held_voided_approved_and_paid(self, api_client, program, customer):
        commission_id = sold(api_client, program)
        commission_hold(commission_id=commission_id, reason="checking", actor="user:alice")
        held = explained(api_client, program)["commission"]
        assert (held["payable_cents"], held["payable_text"]) == (2000, "still pays 20.00 USD if released: on hold")

        commission_void(commission_id=commission_id, reason="fraud confirmed", actor="user:alice")
        voided = explained(api_client, program)["commission"]
        assert (voided["payable_cents"], voided["payable_text"]) == (
            0,
            "still pays 0.00 USD: voided: fraud confirmed",
        )

        approved_id = sold(api_client, program, transaction_id="txn_2", amount_cents=5000)
        assert commission_approve(commission_id=approved_id, now=timezone.now() + timedelta(days=31))
        approved = explained(api_client, program, "txn_2")["commission"]
        assert approved["payable_text"] == "still pays 10.00 USD: credited"

        partner = customer.first_partner
        withdrawal = withdrawal_request(partner=partner, amount_cents=1000, currency="USD")
        assert withdrawal_mark_paid(withdrawal=withdrawal)
        paid = explained(api_client, program, "txn_2")["commission"]
        assert (paid["status"], paid["payable_text"]) == ("paid", "still pays 10.00 USD: paid out")

    def test_a_renewal_with_no_commission_has_nothing_to_say(self, api_client, program, customer):
        sold(api_client, program, transaction_id="sub_first", sale_type="subscription")
        renewal = post_sale(
            api_client, program, **sale_body(transaction_id="renewal", sale_type="subscription", is_recurring=True)
        )
        assert renewal.status_code == 200 and renewal.json()["commission_id"] is None
        commission = explained(api_client, program, "renewal")["commission"]
        assert (commission["id"], commission["payable_cents"], commission["payable_text"]) == (None, None, "")


class TestMoneyInWords:
    def test_a_vnd_sale_has_no_decimals(self, api_client, program, customer):
        commission_id = sold(api_client, program, amount_cents=250000, currency="VND")

        data = explained(api_client, program)

        assert data["commission"]["arithmetic"]["text"] == "20% of 250,000 VND = 50,000 VND"
        assert f"commission #{commission_id} of 50,000 VND is pending" in data["summary"]
        assert data["commission"]["payable_text"].startswith("still pays 50,000 VND")
        assert data["sale"]["amount_cents"] == 250000
