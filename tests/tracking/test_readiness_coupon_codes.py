"""Readiness names the coupon codes recent live sales carried that no partner holds: refused sale API calls
(`coupon_code`, logged by tracking.services.sale) and unattributed Stripe payments (their promotion code, logged by
tracking.stripe.events). A program without such sales reads what it read before, in as many queries."""

import secrets
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from groups.codes import code_register
from groups.models import CouponCode
from insight.readiness import readiness_compute
from tests.factories import PartnerProgramFactory, ProgramFactory
from tests.helpers import bearer
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event
from tests.tracking.sales import post_sale

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stripe_webhook_secret")]

CHECK = "coupon_codes_unheld"
NEXT_STEP = (
    "Register each code for the partner who gives it out (the partner's coupon codes), or reactivate the code or "
    "partner that held it: the next sale carrying it is credited to that partner. A code no partner gives out (a "
    "store-wide promotion) needs nothing."
)


@pytest.fixture
def program():
    return ProgramFactory(stripe_account_id=ACCOUNT)


def refused_sale(api_client, program, code: str) -> None:
    response = post_sale(
        api_client, program, transaction_id=f"t_{secrets.token_hex(4)}", amount_cents=5000, coupon_code=code
    )
    assert response.status_code == 400


def stripe_payment_with(client, django_capture_on_commit_callbacks, code: str) -> None:
    """A guest checkout with a promotion code, expanded (Checkout Session `discounts`: [{coupon, promotion_code}],
    docs.stripe.com/api/checkout/sessions/object; PromotionCode `code`, docs.stripe.com/api/promotion_codes/object)."""
    session = checkout_session(email=f"new{secrets.token_hex(3)}@example.com", customer=None)
    promotion = {"id": f"promo_1{secrets.token_hex(11)}", "object": "promotion_code", "code": code, "active": True}
    session["discounts"] = [{"coupon": "Z4OV52SU", "promotion_code": promotion}]
    with django_capture_on_commit_callbacks(execute=True):
        assert post_event(client, event("checkout.session.completed", session)).status_code == 200


def codes_check(verdict: dict[str, Any]) -> dict[str, Any] | None:
    return next((check for check in verdict["checks"] if check["id"] == CHECK), None)


def test_sales_carrying_codes_no_partner_holds_are_named(
    api_client, client, django_capture_on_commit_callbacks, program
):
    refused_sale(api_client, program, "jane20")
    refused_sale(api_client, program, "JANE20")
    stripe_payment_with(client, django_capture_on_commit_callbacks, "bob10")

    check = codes_check(readiness_compute(program=program))

    assert check == {
        "id": CHECK,
        "status": "warn",
        "title": "Coupon codes no partner holds",
        "detail": "3 sale(s) of the last 7 days carried coupon codes no partner holds: JANE20, BOB10",
        "next_step": NEXT_STEP,
    }


def test_over_http_the_route_names_them_too(api_client, program):
    refused_sale(api_client, program, "JANE20")
    response = api_client.get("/api/v1/programs/me/readiness", **bearer(program.raw_api_key))
    assert response.status_code == 200
    assert codes_check(response.json())["detail"].endswith("no partner holds: JANE20")


def test_a_code_registered_since_is_no_longer_named(api_client, program):
    refused_sale(api_client, program, "JANE20")
    refused_sale(api_client, program, "BOB10")
    code_register(program=program, partner=PartnerProgramFactory.create(program=program).partner, code="jane20")
    assert codes_check(readiness_compute(program=program))["detail"].endswith("no partner holds: BOB10")
    code_register(program=program, partner=PartnerProgramFactory.create(program=program).partner, code="BOB10")
    assert codes_check(readiness_compute(program=program)) is None


def test_a_code_deactivated_since_is_named_again(api_client, program):
    partner = PartnerProgramFactory.create(program=program).partner
    code_register(program=program, partner=partner, code="JANE20")
    CouponCode.objects.update(is_active=False)
    refused_sale(api_client, program, "JANE20")
    assert "JANE20" in codes_check(readiness_compute(program=program))["detail"]


def test_another_programs_codes_are_not_named(api_client, program):
    refused_sale(api_client, ProgramFactory(), "JANE20")
    assert codes_check(readiness_compute(program=program)) is None


def test_codes_older_than_the_window_are_not_named(api_client, program):
    with time_machine.travel(timezone.now() - timedelta(days=8)):
        refused_sale(api_client, program, "JANE20")
    assert codes_check(readiness_compute(program=program)) is None


def test_a_program_without_such_sales_reads_what_and_as_much_as_before(api_client, program):
    refused_sale(api_client, program, "")  # a refused sale without a code: no customer, no code
    with CaptureQueriesContext(connection) as before:
        verdict = readiness_compute(program=program)
    assert codes_check(verdict) is None
    assert [check["id"] for check in verdict["checks"]] == [
        "referral_links",
        "clicks_received",
        "leads_with_customer_key",
        "sales_attributed",
        "key_health",
        "stripe_connection",
        "live_events",
        *[check["id"] for check in verdict["checks"][7:] if check["id"] != CHECK],
    ]
    # With such a sale, two queries more (the codes, and which of them a partner holds now); none without.
    refused_sale(api_client, program, "JANE20")
    with CaptureQueriesContext(connection) as after:
        readiness_compute(program=program)
    assert len(after) == len(before) + 2
