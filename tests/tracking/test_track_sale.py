"""POST /api/v1/track/sale: body checks, attribution, commissions, test mode, failures and limits.
Duplicate transaction ids (and the races around them) are in test_track_sale_duplicate.py."""

import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import DatabaseError
from django.utils import timezone

from commissions.models import Commission, LedgerEntry, ProductCommissionRate
from core import messages
from programs.models import PartnerProgram, ProgramKey
from programs.services import program_key_mark_rotation
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import assert_rate_limited, bad_request, bearer, platform_error
from tracking.models import SaleEvent, TrackingLog

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/sale"
REFUND_URL = "/api/v1/track/refund"


def post_sale(client, program, key: str | None = None, **body):
    return client.post(URL, body, format="json", **bearer(key or program.raw_api_key))


def nothing_recorded() -> bool:
    return not (SaleEvent.objects.exists() or Commission.objects.exists() or LedgerEntry.objects.exists())


def metrics(link) -> tuple[int, int]:
    row = PartnerProgram.objects.get(partner=link.partner, program=link.program)
    return row.sales, row.revenue_cents


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30, cookie_duration=30)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link, customer_key="user_1", customer_status="lead")


@pytest.fixture
def frozen(time_machine):
    """Stops the clock at the current time, so stored times can be compared exactly."""
    now = timezone.now().replace(microsecond=0)
    time_machine.move_to(now, tick=False)
    return now


def sale_body(**overrides) -> dict:
    return {"transaction_id": "txn_1", "amount_cents": 10000, "customer_key": "user_1", **overrides}


class TestAttributedSale:
    def test_it_answers_the_sale_and_commission_ids(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        commission = Commission.objects.get()
        assert response.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": commission.pk,
            "message": messages.SALE_RECORDED,
        }
        assert response.has_header("X-Request-ID")
        assert response["X-RateLimit-Limit"] == "120"

    def test_it_stores_every_sale_field(self, api_client, program, link, customer, frozen):
        occurred = frozen - timedelta(days=2, hours=3)
        body = sale_body(
            transaction_id="pi_3Pabc",
            amount_cents=4999,
            tax_cents=833,
            currency="EUR",
            sale_type="subscription",
            is_recurring=True,
            subscription_id="sub_42",
            subscription_interval="quarterly",
            product_id="pro_plan",
            line_items={"items": [{"sku": "pro", "qty": 1}]},
            occurred_at=occurred.isoformat(),
            provider="paddle",
            provider_payment_id="txn_01h8",
            livemode=True,
        )
        response = post_sale(api_client, program, **body)
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        assert sale.processor_event_id == "pi_3Pabc"
        assert (sale.program_id, sale.customer_id, sale.partner_id) == (
            program.pk,
            customer.pk,
            link.partner_id,
        )
        assert sale.click_id == customer.click_id
        assert (sale.amount_cents, sale.tax_cents, sale.currency) == (4999, 833, "EUR")
        assert (sale.sale_type, sale.is_recurring, sale.payment_status) == ("subscription", True, "paid")
        assert (sale.subscription_id, sale.subscription_interval) == ("sub_42", "quarterly")
        assert sale.product_id == "pro_plan"
        assert sale.line_items == {"items": [{"sku": "pro", "qty": 1}]}
        assert sale.occurred_at == occurred
        assert (sale.provider, sale.provider_payment_id) == ("paddle", "txn_01h8")
        assert sale.sale_date == frozen
        assert sale.attributed is True and sale.is_test is False

    def test_optional_fields_take_their_defaults(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body())
        sale = SaleEvent.objects.get()
        assert (sale.currency, sale.sale_type, sale.is_recurring) == ("USD", "payment", False)
        assert sale.tax_cents is None and sale.occurred_at is None and sale.line_items is None
        assert (sale.provider, sale.provider_payment_id, sale.subscription_id, sale.product_id) == (
            "",
            "",
            "",
            "",
        )

    def test_a_lower_case_currency_is_upper_cased(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(currency="eur"))
        assert response.status_code == 200
        assert SaleEvent.objects.get().currency == "EUR"
        assert Commission.objects.get().currency == "EUR"

    def test_tax_is_stored_but_the_commission_uses_the_whole_amount(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body(amount_cents=12000, tax_cents=2000))
        assert Commission.objects.get().amount_cents == 2400

    def test_the_customer_becomes_converted(self, api_client, program, customer, frozen):
        post_sale(api_client, program, **sale_body())
        customer.refresh_from_db()
        assert customer.first_sale_at == frozen
        assert customer.customer_status == "converted"

    @pytest.mark.parametrize(
        "provider",
        [
            "stripe",
            "polar",
            "dodo",
            "paddle",
            "lemonsqueezy",
            "creem",
            "sepay",
            "payos",
            "apipay",
            "x402",
            "other",
        ],
    )
    def test_every_listed_provider_is_accepted(self, api_client, program, customer, provider):
        response = post_sale(api_client, program, **sale_body(provider=provider))
        assert response.status_code == 200
        assert SaleEvent.objects.get().provider == provider

    def test_a_provider_payment_id_of_255_characters_is_accepted(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(provider_payment_id="p" * 255))
        assert response.status_code == 200

    @pytest.mark.parametrize("ago", [timedelta(days=29, hours=23), timedelta(0), -timedelta(minutes=4)])
    def test_occurred_at_within_the_limits_is_accepted(self, api_client, program, customer, frozen, ago):
        response = post_sale(api_client, program, **sale_body(occurred_at=(frozen - ago).isoformat()))
        assert response.status_code == 200

    def test_occurred_at_with_a_z_suffix_or_another_offset_is_accepted(self, api_client, program, customer, frozen):
        occurred = (frozen - timedelta(days=1)).astimezone(UTC)
        in_utc = occurred.strftime("%Y-%m-%dT%H:%M:%SZ")
        in_hanoi = occurred.astimezone(timezone.get_fixed_timezone(7 * 60)).isoformat()
        assert post_sale(api_client, program, **sale_body(occurred_at=in_utc)).status_code == 200
        assert (
            post_sale(api_client, program, **sale_body(transaction_id="txn_2", occurred_at=in_hanoi)).status_code == 200
        )
        assert list(SaleEvent.objects.values_list("occurred_at", flat=True)) == [occurred, occurred]


class TestValidation:
    @pytest.mark.parametrize(
        "body",
        [
            {"amount_cents": 100},
            {"transaction_id": None, "amount_cents": 100},
            {"transaction_id": 12345, "amount_cents": 100},
            {"transaction_id": ["txn"], "amount_cents": 100},
            {"transaction_id": "", "amount_cents": 100},
            {"transaction_id": "t" * 256, "amount_cents": 100},
        ],
        ids=["missing", "null", "integer", "list", "empty", "too-long"],
    )
    def test_transaction_id_must_be_a_string(self, api_client, program, customer, body):
        response = post_sale(api_client, program, customer_key="user_1", **body)
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_TRANSACTION_ID_REQUIRED, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize(
        "amount",
        [None, 0, -100, "100", 99.5, True, 10**20],
        ids=["null", "zero", "negative", "string", "float", "bool", "beyond-64-bit"],
    )
    def test_amount_cents_must_be_a_positive_integer(self, api_client, program, customer, amount):
        response = post_sale(api_client, program, **sale_body(amount_cents=amount))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_AMOUNT_REQUIRED, code="invalid_request")
        assert nothing_recorded()

    def test_amount_cents_is_required(self, api_client, program, customer):
        response = post_sale(api_client, program, transaction_id="txn_1", customer_key="user_1")
        assert response.json() == bad_request(messages.SALE_AMOUNT_REQUIRED, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize(
        "occurred_at",
        [
            lambda now: (now - timedelta(days=30, minutes=1)).isoformat(),
            lambda now: (now + timedelta(minutes=6)).isoformat(),
            lambda now: "yesterday",
            lambda now: (now - timedelta(days=1)).strftime("%Y-%m-32T%H:%M:%S+00:00"),
            lambda now: (now - timedelta(days=1)).replace(tzinfo=None).isoformat(),
            lambda now: "",
            lambda now: int(now.timestamp()),
        ],
        ids=[
            "older-than-30-days",
            "more-than-5-minutes-ahead",
            "not-iso",
            "impossible-date",
            "no-offset",
            "empty",
            "number",
        ],
    )
    def test_occurred_at_must_be_a_recent_iso_time_with_offset(
        self, api_client, program, customer, frozen, occurred_at
    ):
        response = post_sale(api_client, program, **sale_body(occurred_at=occurred_at(frozen)))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_OCCURRED_AT_INVALID, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize("provider", ["shopify", "Stripe", "", 7])
    def test_provider_must_be_listed(self, api_client, program, customer, provider):
        response = post_sale(api_client, program, **sale_body(provider=provider))
        assert response.status_code == 400
        body = response.json()
        assert body["error"]["message"].startswith(messages.SALE_PROVIDER_INVALID)
        assert body == bad_request(body["error"]["message"], code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize("value", ["", "p" * 256, 12345], ids=["empty", "256-chars", "integer"])
    def test_provider_payment_id_must_have_1_to_255_characters(self, api_client, program, customer, value):
        response = post_sale(api_client, program, **sale_body(provider_payment_id=value))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_PROVIDER_PAYMENT_ID_INVALID, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize("value", ["false", "true", 0, 1])
    def test_livemode_must_be_a_boolean(self, api_client, program, customer, value):
        response = post_sale(api_client, program, **sale_body(livemode=value))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.SALE_LIVEMODE_INVALID, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"amount_cents": 0}, messages.SALE_TRANSACTION_ID_REQUIRED),
            (
                {
                    "transaction_id": 1,
                    "amount_cents": "100",
                    "occurred_at": "x",
                    "provider": "x",
                    "provider_payment_id": "",
                    "livemode": "false",
                },
                messages.SALE_TRANSACTION_ID_REQUIRED,
            ),
            (
                {"transaction_id": "t", "amount_cents": "100", "occurred_at": "x"},
                messages.SALE_AMOUNT_REQUIRED,
            ),
            (
                {"transaction_id": "t", "amount_cents": 1, "occurred_at": "x", "provider": "x"},
                messages.SALE_OCCURRED_AT_INVALID,
            ),
            (
                {"transaction_id": "t", "amount_cents": 1, "provider": "x", "provider_payment_id": ""},
                messages.SALE_PROVIDER_INVALID,
            ),
            (
                {"transaction_id": "t", "amount_cents": 1, "provider_payment_id": "", "livemode": "false"},
                messages.SALE_PROVIDER_PAYMENT_ID_INVALID,
            ),
            # livemode "false" is not a boolean, so it does not turn the call into a test sale either.
            ({"amount_cents": 1, "livemode": "false"}, messages.SALE_TRANSACTION_ID_REQUIRED),
        ],
        ids=[
            "id-before-amount",
            "all-wrong",
            "amount-before-occurred_at",
            "occurred_at-before-provider",
            "provider-before-provider_payment_id",
            "provider_payment_id-before-livemode",
            "string-livemode-is-live",
        ],
    )
    def test_the_first_wrong_field_in_the_spec_order_wins(self, api_client, program, customer, body, message):
        response = post_sale(api_client, program, customer_key="user_1", **body)
        assert response.status_code == 400
        assert response.json()["error"]["message"].startswith(message)
        assert response.json()["error"]["code"] == "invalid_request"
        assert nothing_recorded()

    def test_the_body_is_checked_before_the_customer_is_looked_up(self, api_client, program):
        response = post_sale(api_client, program, **sale_body(amount_cents=0, customer_key="nobody"))
        assert response.json() == bad_request(messages.SALE_AMOUNT_REQUIRED, code="invalid_request")

    def test_malformed_json_is_an_invalid_request(self, api_client, program):
        response = api_client.post(URL, "{nope", content_type="application/json", **bearer(program.raw_api_key))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.MALFORMED_JSON, code="invalid_request")


class TestCurrency:
    def test_an_unsupported_currency_is_422_and_creates_nothing(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(currency="GBP"))
        assert response.status_code == 422
        assert response.json() == platform_error(
            422, "UnprocessableEntityError", "currency GBP is not supported", "unsupported_currency"
        )
        assert response.json()["error"]["message"] == messages.SALE_UNSUPPORTED_CURRENCY.format(currency="GBP")
        assert nothing_recorded()
        assert metrics(customer.first_link) == (0, 0)

    def test_a_refused_currency_does_not_consume_the_transaction_id(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body(currency="GBP"))
        assert post_sale(api_client, program, **sale_body(currency="USD")).status_code == 200

    @pytest.mark.parametrize("currency", ["USD", "EUR", "VND"])
    def test_the_listed_currencies_are_accepted(self, api_client, program, customer, currency):
        assert post_sale(api_client, program, **sale_body(currency=currency)).status_code == 200
        assert SaleEvent.objects.get().currency == currency


class TestAuthentication:
    @pytest.mark.parametrize(
        ("header", "message"),
        [
            (None, messages.MISSING_AUTH_HEADER),
            ("Basic dXNlcjpwYXNz", messages.MISSING_AUTH_HEADER),
            ("aff_live_key_without_scheme", messages.MISSING_AUTH_HEADER),
            ("Bearer ", messages.MISSING_API_TOKEN),
            ("Bearer    ", messages.MISSING_API_TOKEN),
            ("Bearer aff_does_not_exist", messages.INVALID_API_TOKEN),
        ],
        ids=["missing", "basic", "no-scheme", "empty-token", "blank-token", "unknown-token"],
    )
    def test_it_refuses_a_missing_or_unknown_key(self, api_client, customer, header, message):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        response = api_client.post(URL, sale_body(), format="json", **extra)
        assert response.status_code == 401
        assert response.json() == platform_error(401, "UnauthorizedError", message, "unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"
        assert nothing_recorded()

    def test_test_mode_still_needs_the_key(self, api_client, customer):
        response = api_client.post(URL, sale_body(additional_data={"test_mode": True}), format="json")
        assert response.status_code == 401
        assert response.json()["error"]["message"] == messages.MISSING_AUTH_HEADER
        assert nothing_recorded()

    def test_a_retired_key_gets_the_typed_rotation_error(self, api_client, program, customer):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(seconds=1))
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 401
        body = response.json()
        assert "data" not in body
        assert body["error"]["code"] == "api_key_rotation_required"
        assert nothing_recorded()


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
    def expired_body(self, program, age_days: float) -> dict:
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


def program_with(link, **fields):
    program = link.program
    for name, value in fields.items():
        setattr(program, name, value)
    program.save()
    return program


class TestCommissionAmounts:
    @pytest.mark.parametrize(
        ("rate", "amount", "expected"),
        [
            ("20", 10000, 2000),
            ("15", 1010, 152),  # 151.5 rounds half up
            ("15", 1003, 150),  # 150.45 rounds down
            ("12.5", 100, 13),  # 12.5 rounds up, not to even
            ("2.5", 20, 1),  # 0.5 rounds up
            ("100", 777, 777),
        ],
    )
    def test_percent_is_the_rate_of_the_amount_rounded_half_up(self, api_client, link, rate, amount, expected):
        program = program_with(link, commission_type="percent", commission_rate=Decimal(rate))
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(amount_cents=amount))
        assert Commission.objects.get().amount_cents == expected

    def test_percent_pays_every_sale_of_a_customer(self, api_client, program, link, customer):
        first = post_sale(api_client, program, **sale_body(transaction_id="t1"))
        second = post_sale(api_client, program, **sale_body(transaction_id="t2", amount_cents=3000))
        assert second.status_code == 200
        sale = SaleEvent.objects.get(processor_event_id="t2")
        commission = Commission.objects.get(sale=sale)
        assert second.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": commission.pk,
            "message": messages.SALE_RECORDED,
        }
        assert first.json()["commission_id"] != commission.pk
        assert sorted(Commission.objects.values_list("amount_cents", flat=True)) == [600, 2000]
        assert metrics(link) == (2, 13000)

    def test_fixed_pays_the_rate_on_every_sale_whatever_the_amount(self, api_client, link):
        program = program_with(link, commission_type="fixed", commission_rate=Decimal("500"))
        CustomerFactory(link=link, customer_key="user_1")
        first = post_sale(api_client, program, **sale_body(transaction_id="t1", amount_cents=99))
        second = post_sale(api_client, program, **sale_body(transaction_id="t2", amount_cents=100000))
        assert Commission.objects.get(pk=first.json()["commission_id"]).amount_cents == 500
        assert Commission.objects.get(pk=second.json()["commission_id"]).amount_cents == 500
        assert second.json()["message"] == messages.SALE_RECORDED

    @pytest.mark.parametrize("commission_type", ["percent", "fixed"])
    def test_a_renewal_on_a_one_off_program_is_stored_without_commission(self, api_client, link, commission_type):
        program = program_with(link, commission_type=commission_type, commission_rate=Decimal("20"))
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="sub_first", sale_type="subscription"))
        renewal = post_sale(
            api_client, program, **sale_body(transaction_id="sub_cycle_2", sale_type="subscription", is_recurring=True)
        )
        assert renewal.status_code == 200
        sale = SaleEvent.objects.get(processor_event_id="sub_cycle_2")
        assert renewal.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": None,
            "message": messages.SALE_RECORDED_RENEWAL_NOT_PAID,
        }
        assert sale.no_commission_reason == "renewal_not_recurring"
        assert Commission.objects.count() == 1
        assert metrics(link) == (2, 20000)  # the renewal still counts as a sale

    def test_a_renewal_as_the_first_sale_converts_the_customer_without_commission(
        self, api_client, program, customer, frozen
    ):
        renewal = post_sale(api_client, program, **sale_body(is_recurring=True))
        assert renewal.json()["commission_id"] is None
        assert renewal.json()["message"] == messages.SALE_RECORDED_RENEWAL_NOT_PAID
        customer.refresh_from_db()
        assert (customer.customer_status, customer.first_sale_at) == ("converted", frozen)
        assert not Commission.objects.exists()

    def test_a_renewal_resent_is_a_duplicate_and_stays_unpaid(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body(is_recurring=True))
        again = post_sale(api_client, program, **sale_body(is_recurring=True))
        assert again.status_code == 409
        assert not Commission.objects.exists()

    @pytest.mark.parametrize("commission_type", ["recurring_percent", "recurring_fixed"])
    def test_recurring_types_pay_renewals(self, api_client, link, commission_type):
        program = program_with(link, commission_type=commission_type, commission_rate=Decimal("10"), duration_months=12)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="inv_1", sale_type="subscription"))
        renewal = post_sale(
            api_client, program, **sale_body(transaction_id="inv_2", sale_type="subscription", is_recurring=True)
        )
        assert renewal.json()["message"] == messages.SALE_RECORDED
        assert Commission.objects.get(pk=renewal.json()["commission_id"]).sale.is_recurring is True

    def test_recurring_percent_pays_every_sale(self, api_client, link):
        program = program_with(link, commission_type="recurring_percent", commission_rate=Decimal("30"))
        CustomerFactory(link=link, customer_key="user_1")
        for n, amount in enumerate([1000, 2000, 3333]):
            response = post_sale(api_client, program, **sale_body(transaction_id=f"inv_{n}", amount_cents=amount))
            assert response.json()["message"] == messages.SALE_RECORDED
        assert sorted(Commission.objects.values_list("amount_cents", flat=True)) == [300, 600, 1000]
        assert metrics(link) == (3, 6333)

    def test_recurring_fixed_pays_every_sale(self, api_client, link):
        program = program_with(link, commission_type="recurring_fixed", commission_rate=Decimal("250"))
        CustomerFactory(link=link, customer_key="user_1")
        for n in range(3):
            post_sale(api_client, program, **sale_body(transaction_id=f"inv_{n}", amount_cents=1000 + n))
        assert list(Commission.objects.values_list("amount_cents", flat=True)) == [250, 250, 250]

    @pytest.mark.parametrize("commission_type", ["recurring_percent", "recurring_fixed"])
    def test_recurring_stops_after_duration_months(self, api_client, link, time_machine, commission_type):
        program = program_with(link, commission_type=commission_type, commission_rate=Decimal("10"), duration_months=3)
        time_machine.move_to(datetime(2025, 1, 15, 9, tzinfo=UTC), tick=False)
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, program, **sale_body(transaction_id="jan")).json()["commission_id"]
        time_machine.move_to(datetime(2025, 4, 15, 8, 59, 59, tzinfo=UTC), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="apr")).json()["commission_id"]
        time_machine.move_to(datetime(2025, 4, 15, 9, tzinfo=UTC), tick=False)
        late = post_sale(api_client, program, **sale_body(transaction_id="apr_late", is_recurring=True))
        assert late.status_code == 200
        sale = SaleEvent.objects.get(processor_event_id="apr_late")
        assert late.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": None,
            "message": messages.SALE_RECORDED_RECURRING_ENDED.format(months=3),
        }
        assert "3 months" in late.json()["message"]
        assert sale.no_commission_reason == "recurring_period_ended"
        assert Commission.objects.count() == 2
        assert SaleEvent.objects.count() == 3

    def test_the_recurring_period_runs_from_the_first_commissioned_sale(self, api_client, link, time_machine):
        """A renewal stored without commission while the program was percent does not start the period."""
        program = program_with(link, commission_type="percent", commission_rate=Decimal("10"), duration_months=1)
        time_machine.move_to(datetime(2025, 1, 10, tzinfo=UTC), tick=False)
        CustomerFactory(link=link, customer_key="user_1")
        assert (
            post_sale(api_client, program, **sale_body(transaction_id="jan", is_recurring=True)).json()["commission_id"]
            is None
        )
        program = program_with(link, commission_type="recurring_percent")
        time_machine.move_to(datetime(2025, 3, 1, tzinfo=UTC), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="mar", is_recurring=True)).json()[
            "commission_id"
        ]
        time_machine.move_to(datetime(2025, 3, 31, tzinfo=UTC), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="mar_end", is_recurring=True)).json()[
            "commission_id"
        ]
        time_machine.move_to(datetime(2025, 4, 1, tzinfo=UTC), tick=False)
        late = post_sale(api_client, program, **sale_body(transaction_id="apr", is_recurring=True))
        assert late.json()["message"] == messages.SALE_RECORDED_RECURRING_ENDED.format(months=1)

    def test_a_refund_does_not_restart_the_recurring_period(self, api_client, link, time_machine):
        program = program_with(
            link, commission_type="recurring_fixed", commission_rate=Decimal("100"), duration_months=1
        )
        time_machine.move_to(datetime(2025, 1, 10, tzinfo=UTC), tick=False)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="jan"))
        refund = api_client.post(REFUND_URL, {"transaction_id": "jan"}, format="json", **bearer(program.raw_api_key))
        assert refund.json()["status"] == "reversed"
        time_machine.move_to(datetime(2025, 2, 10, tzinfo=UTC), tick=False)
        late = post_sale(api_client, program, **sale_body(transaction_id="feb", is_recurring=True))
        assert late.json()["commission_id"] is None
        assert late.json()["message"] == messages.SALE_RECORDED_RECURRING_ENDED.format(months=1)

    def test_duration_zero_is_lifetime(self, api_client, link, time_machine):
        program = program_with(
            link, commission_type="recurring_fixed", commission_rate=Decimal("100"), duration_months=0
        )
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="first"))
        time_machine.move_to(timezone.now() + timedelta(days=3 * 365), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="years_later")).json()["commission_id"]

    def test_a_product_rate_overrides_the_programs_policy(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program, product_id="pro_yearly", commission_type="fixed", commission_rate=Decimal("1500")
        )
        post_sale(api_client, program, **sale_body(product_id="pro_yearly", amount_cents=50000))
        assert Commission.objects.get().amount_cents == 1500

    def test_a_product_without_a_rate_uses_the_programs_policy(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program, product_id="pro_yearly", commission_type="fixed", commission_rate=Decimal("1500")
        )
        post_sale(api_client, program, **sale_body(product_id="starter", amount_cents=50000))
        assert Commission.objects.get().amount_cents == 10000

    def test_a_product_rate_of_another_program_is_ignored(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=ProgramFactory(),
            product_id="pro_yearly",
            commission_type="fixed",
            commission_rate=Decimal("1"),
        )
        post_sale(api_client, program, **sale_body(product_id="pro_yearly", amount_cents=50000))
        assert Commission.objects.get().amount_cents == 10000

    def test_a_recurring_product_rate_pays_renewals_of_that_product_only(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program,
            product_id="addon",
            commission_type="recurring_percent",
            commission_rate=Decimal("50"),
        )
        post_sale(api_client, program, **sale_body(transaction_id="t1", product_id="base"))
        addon = post_sale(
            api_client,
            program,
            **sale_body(transaction_id="t2", product_id="addon", amount_cents=800, is_recurring=True),
        )
        base_renewal = post_sale(
            api_client, program, **sale_body(transaction_id="t3", product_id="base", is_recurring=True)
        )
        base_again = post_sale(api_client, program, **sale_body(transaction_id="t4", product_id="base"))
        assert Commission.objects.get(pk=addon.json()["commission_id"]).amount_cents == 400
        assert base_renewal.json()["commission_id"] is None
        assert base_renewal.json()["message"] == messages.SALE_RECORDED_RENEWAL_NOT_PAID
        assert Commission.objects.get(pk=base_again.json()["commission_id"]).amount_cents == 2000

    def test_a_one_off_product_rate_on_a_recurring_program_does_not_pay_renewals(self, api_client, link):
        program = program_with(link, commission_type="recurring_percent", commission_rate=Decimal("10"))
        CustomerFactory(link=link, customer_key="user_1")
        ProductCommissionRate.objects.create(
            program=program, product_id="setup_fee", commission_type="fixed", commission_rate=Decimal("700")
        )
        setup = post_sale(api_client, program, **sale_body(transaction_id="t1", product_id="setup_fee"))
        again = post_sale(
            api_client, program, **sale_body(transaction_id="t2", product_id="setup_fee", is_recurring=True)
        )
        plan = post_sale(api_client, program, **sale_body(transaction_id="t3", product_id="plan", is_recurring=True))
        assert Commission.objects.get(pk=setup.json()["commission_id"]).amount_cents == 700
        assert again.json()["message"] == messages.SALE_RECORDED_RENEWAL_NOT_PAID
        assert Commission.objects.get(pk=plan.json()["commission_id"]).amount_cents == 1000

    def test_the_recurring_period_of_a_product_rate_uses_the_programs_duration(self, api_client, program, time_machine):
        program.duration_months = 2
        program.save()
        ProductCommissionRate.objects.create(
            program=program, product_id="plan", commission_type="recurring_fixed", commission_rate=Decimal("300")
        )
        time_machine.move_to(datetime(2025, 1, 10, tzinfo=UTC), tick=False)
        CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="jan", product_id="plan"))
        time_machine.move_to(datetime(2025, 3, 9, tzinfo=UTC), tick=False)
        assert post_sale(
            api_client, program, **sale_body(transaction_id="mar", product_id="plan", is_recurring=True)
        ).json()["commission_id"]
        time_machine.move_to(datetime(2025, 3, 10, tzinfo=UTC), tick=False)
        late = post_sale(
            api_client, program, **sale_body(transaction_id="mar_late", product_id="plan", is_recurring=True)
        )
        assert late.json()["message"] == messages.SALE_RECORDED_RECURRING_ENDED.format(months=2)

    def test_vnd_amounts_are_whole_units_without_conversion(self, api_client, program, link, customer):
        post_sale(api_client, program, **sale_body(amount_cents=1_499_999, currency="VND"))
        commission = Commission.objects.get()
        assert (commission.amount_cents, commission.currency) == (300_000, "VND")  # 299999.8 rounds up
        assert SaleEvent.objects.get().amount_cents == 1_499_999
        assert metrics(link) == (1, 1_499_999)


class TestHoldAndLedger:
    def test_a_hold_period_leaves_the_commission_pending_and_uncredited(
        self, api_client, program, link, customer, frozen
    ):
        post_sale(api_client, program, **sale_body())
        commission = Commission.objects.get()
        assert (commission.status, commission.credited, commission.approved_at) == ("pending", False, None)
        assert commission.hold_until == frozen + timedelta(days=30)
        assert (commission.program_id, commission.partner_id, commission.customer_id) == (
            program.pk,
            link.partner_id,
            customer.pk,
        )
        assert commission.sale_id == SaleEvent.objects.get().pk
        assert not LedgerEntry.objects.exists()

    def test_no_hold_approves_and_credits_at_once(self, api_client, link, frozen):
        program = program_with(link, hold_days=0)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(currency="EUR"))
        commission = Commission.objects.get()
        assert (commission.status, commission.credited, commission.approved_at) == ("approved", True, frozen)
        assert commission.hold_until == frozen
        entry = LedgerEntry.objects.get()
        assert (entry.kind, entry.amount_cents, entry.currency) == ("credit", 2000, "EUR")
        assert (entry.partner_id, entry.program_id, entry.commission_id) == (
            link.partner_id,
            program.pk,
            commission.pk,
        )

    def test_a_sale_without_commission_writes_no_ledger_entry(self, api_client, link):
        program = program_with(link, hold_days=0)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="t1"))
        post_sale(api_client, program, **sale_body(transaction_id="t2", is_recurring=True))
        assert LedgerEntry.objects.count() == 1


class TestMetrics:
    def test_the_partner_program_counts_the_sale_and_its_revenue(self, api_client, program, link, customer):
        PartnerProgram.objects.filter(partner=link.partner, program=program).update(sales=4, revenue_cents=40000)
        post_sale(api_client, program, **sale_body(amount_cents=5000))
        assert metrics(link) == (5, 45000)

    def test_other_partner_programs_are_untouched(self, api_client, program, customer):
        other = ReferralLinkFactory(program=program)
        post_sale(api_client, program, **sale_body())
        assert metrics(other) == (0, 0)

    def test_a_failed_metric_update_is_logged_and_the_sale_still_succeeds(
        self, api_client, program, link, customer, monkeypatch, caplog
    ):
        def unavailable(**kwargs):
            raise DatabaseError("metrics table unavailable")

        monkeypatch.setattr("tracking.services.sale.partner_program_add", unavailable)
        with caplog.at_level(logging.ERROR, logger="svc.tracking"):
            response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 200
        assert response.json()["commission_id"] == Commission.objects.get().pk
        assert SaleEvent.objects.count() == 1
        assert metrics(link) == (0, 0)
        assert any(record.message == "sale.metrics_failed" for record in caplog.records)


class TestFailures:
    def test_a_failed_commission_keeps_the_sale_and_a_retry_is_a_duplicate(
        self, api_client, program, customer, monkeypatch, caplog
    ):
        def boom(**kwargs):
            raise RuntimeError("commission table on fire")

        monkeypatch.setattr("tracking.services.sale.commission_create_for_sale", boom)
        with caplog.at_level(logging.ERROR, logger="svc.tracking"):
            response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 500
        assert response.json() == platform_error(
            500, "InternalServerError", messages.SALE_COMMISSION_FAILED, "internal_error"
        )
        assert response.has_header("X-Request-ID")
        assert "on fire" not in response.content.decode()
        sale = SaleEvent.objects.get()
        assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
        customer.refresh_from_db()
        assert customer.first_sale_at is None  # the commission's transaction rolled back whole
        assert any(record.message == "sale.commission_failed" for record in caplog.records)

        monkeypatch.undo()
        retry = post_sale(api_client, program, **sale_body())
        assert retry.status_code == 409
        assert retry.json() == platform_error(
            409, "ConflictError", messages.SALE_DUPLICATE, "duplicate_transaction", {"sale_id": sale.pk}
        )
        assert not Commission.objects.exists()

    def test_an_unexpected_error_before_the_sale_is_stored_is_sale_tracking_failed(
        self, api_client, program, customer, monkeypatch
    ):
        def boom(**kwargs):
            raise RuntimeError("database hiccup")

        monkeypatch.setattr("tracking.services.sale._customer_for_sale", boom)
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 500
        assert response.json() == platform_error(
            500, "InternalServerError", messages.SALE_TRACKING_FAILED, "internal_error"
        )
        assert nothing_recorded()

        monkeypatch.undo()
        retry = post_sale(api_client, program, **sale_body())  # same transaction_id, as the spec advises
        assert retry.status_code == 200
        assert retry.json()["commission_id"] == Commission.objects.get().pk


class TestTestMode:
    def expected_body(self, sale, program) -> dict:
        return {
            "success": True,
            "message": messages.SALE_TEST_RECORDED,
            "data": {"eventId": sale.pk, "programId": program.pk, "test_mode": True},
        }

    @pytest.mark.parametrize(
        ("extra", "use_test_key"),
        [({"additional_data": {"test_mode": True}}, False), ({"livemode": False}, False), ({}, True)],
        ids=["body-flag", "livemode-false", "test-key"],
    )
    def test_each_trigger_records_a_flagged_sale_without_commission(
        self, api_client, program, link, customer, extra, use_test_key
    ):
        key = program.raw_test_api_key if use_test_key else program.raw_api_key
        response = post_sale(api_client, program, key=key, **sale_body(**extra))
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        assert response.json() == self.expected_body(sale, program)
        assert sale.is_test is True
        assert sale.processor_event_id == "txn_1"
        assert not Commission.objects.exists() and not LedgerEntry.objects.exists()
        assert metrics(link) == (0, 0)
        log = TrackingLog.objects.get()
        assert (log.event, log.outcome, log.is_test, log.program_id) == ("sale", "test", True, program.pk)

    @pytest.mark.parametrize(
        ("extra", "use_test_key"),
        [({"additional_data": {"test_mode": True}}, False), ({"livemode": False}, False), ({}, True)],
        ids=["body-flag", "livemode-false", "test-key"],
    )
    def test_transaction_id_and_amount_are_optional(self, api_client, program, extra, use_test_key):
        key = program.raw_test_api_key if use_test_key else program.raw_api_key
        first = post_sale(api_client, program, key=key, **extra)
        second = post_sale(api_client, program, key=key, **extra)
        assert (first.status_code, second.status_code) == (200, 200)
        assert SaleEvent.objects.filter(is_test=True, processor_event_id=None, amount_cents=0).count() == 2

    def test_a_test_sale_does_not_block_a_live_sale_with_the_same_transaction_id(self, api_client, program, customer):
        test = post_sale(api_client, program, **sale_body(livemode=False))
        live = post_sale(api_client, program, **sale_body())
        assert test.status_code == 200
        assert live.status_code == 200
        assert live.json()["commission_id"] == Commission.objects.get().pk
        assert sorted(SaleEvent.objects.values_list("is_test", flat=True)) == [False, True]

    def test_a_test_sale_does_not_use_up_the_real_customers_first_sale(self, api_client, program, customer):
        post_sale(api_client, program, key=program.raw_test_api_key, **sale_body(transaction_id="test_1"))
        customer.refresh_from_db()
        assert customer.first_sale_at is None
        live = post_sale(api_client, program, **sale_body(transaction_id="live_1"))
        assert live.json()["message"] == messages.SALE_RECORDED

    def test_a_test_sale_still_checks_the_body(self, api_client, program):
        response = post_sale(api_client, program, amount_cents=-1, additional_data={"test_mode": True})
        assert response.json() == bad_request(messages.SALE_AMOUNT_REQUIRED, code="invalid_request")
        assert nothing_recorded()

    @pytest.mark.parametrize(
        ("extra", "use_test_key"),
        [
            ({"livemode": True}, True),
            ({"livemode": True, "additional_data": {"test_mode": True}}, False),
            ({"additional_data": {"test_mode": False}}, True),
        ],
        ids=["livemode-true-with-test-key", "livemode-true-with-body-flag", "body-flag-false-with-test-key"],
    )
    def test_nothing_in_the_body_forces_a_live_sale(self, api_client, program, customer, extra, use_test_key):
        key = program.raw_test_api_key if use_test_key else program.raw_api_key
        response = post_sale(api_client, program, key=key, **sale_body(**extra))
        assert response.json()["data"]["test_mode"] is True
        assert SaleEvent.objects.get().is_test is True
        assert not Commission.objects.exists()

    def test_livemode_true_is_a_live_sale(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(livemode=True))
        assert response.json()["commission_id"] == Commission.objects.get().pk
        assert SaleEvent.objects.get().is_test is False


class TestRateLimit:
    def test_the_121st_call_in_a_minute_is_refused_before_anything_is_recorded(self, api_client, program, customer):
        for _ in range(120):
            assert post_sale(api_client, program).status_code == 400  # cheap calls count too
        response = post_sale(api_client, program, **sale_body())
        assert_rate_limited(response)
        assert nothing_recorded()

    def test_sale_and_refund_share_one_bucket_per_key(self, api_client, program, customer):
        for _ in range(60):
            post_sale(api_client, program)
        for _ in range(60):
            api_client.post(REFUND_URL, {}, format="json", **bearer(program.raw_api_key))
        assert post_sale(api_client, program, **sale_body()).status_code == 429
        refund = api_client.post(REFUND_URL, {"transaction_id": "txn_1"}, format="json", **bearer(program.raw_api_key))
        assert refund.status_code == 429
        other = ProgramFactory()
        assert post_sale(api_client, other, key=other.raw_api_key).status_code == 400  # its own bucket

    def test_the_bucket_empties_after_a_minute(self, api_client, program, customer, frozen, time_machine):
        for _ in range(120):
            post_sale(api_client, program)
        assert post_sale(api_client, program, **sale_body()).status_code == 429
        time_machine.move_to(frozen + timedelta(seconds=61), tick=False)
        assert post_sale(api_client, program, **sale_body()).status_code == 200


class TestQueryCount:
    def test_an_attributed_first_sale_with_a_hold_period(
        self, api_client, program, customer, django_assert_num_queries
    ):
        body = sale_body()
        # 1 program key lookup (program joined)
        # 2 customer by customer_key
        # 3 is the partner enrolled in the program (cached afterwards: see the next test)
        # 4-6 SAVEPOINT, INSERT sale, RELEASE: the sale's own transaction
        # 7 SAVEPOINT: the commission's transaction
        # 8 customer SELECT ... FOR UPDATE (no FOR UPDATE on SQLite, still one query)
        # 9 UPDATE customer first_sale_at, customer_status
        # 10 INSERT commission (pending: no ledger entry)
        # 11 RELEASE SAVEPOINT
        # 12 UPDATE partner-program metrics
        # Same count on SQLite and PostgreSQL. The savepoints exist as the test runs in a transaction;
        # in production they are the two transactions' BEGIN/COMMIT, which are not counted. No product_id,
        # so no per-product rate lookup; the rate limit lives in the cache, not the database.
        with django_assert_num_queries(12):
            response = post_sale(api_client, program, **body)
        assert response.status_code == 200

    def test_an_attributed_first_sale_credited_at_once(self, api_client, link, django_assert_num_queries):
        program = program_with(link, hold_days=0)
        CustomerFactory(link=link, customer_key="user_1")
        body = sale_body()
        # 1 program key lookup (program joined)
        # 2 customer by customer_key
        # 3 is the partner enrolled in the program
        # 4-6 SAVEPOINT, INSERT sale, RELEASE: the sale's own transaction
        # 7 SAVEPOINT: the commission's transaction
        # 8 customer SELECT ... FOR UPDATE (no FOR UPDATE on SQLite, still one query)
        # 9 UPDATE customer first_sale_at, customer_status
        # 10 INSERT commission (approved)
        # 11 INSERT ledger credit
        # 12 RELEASE SAVEPOINT
        # 13 UPDATE partner-program metrics
        # (Savepoints as in the test above; verified on SQLite and PostgreSQL.)
        with django_assert_num_queries(13):
            response = post_sale(api_client, program, **body)
        assert response.status_code == 200

    def test_the_enrolment_is_read_once_then_cached(
        self, api_client, program, customer, link, django_assert_num_queries
    ):
        assert post_sale(api_client, program, **sale_body()).status_code == 200
        CustomerFactory(link=link, customer_key="user_2")
        # As the first sale above, less the enrolment check (query 3), now in the process's cache.
        with django_assert_num_queries(11):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2", customer_key="user_2"))
        assert response.status_code == 200

    def test_a_repeat_sale_takes_no_customer_lock(self, api_client, program, customer, django_assert_num_queries):
        assert post_sale(api_client, program, **sale_body()).json()["commission_id"]
        # 1 program key lookup, 2 customer by customer_key (the enrolment is cached by the first sale)
        # 3-5 SAVEPOINT, INSERT sale, RELEASE
        # 6 SAVEPOINT, 7 INSERT commission, 8 RELEASE: the customer is converted already, so no lock
        # 9 UPDATE partner-program metrics
        with django_assert_num_queries(9):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2"))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk

    def test_a_repeat_sale_within_a_recurring_period_reads_its_start(self, api_client, link, django_assert_num_queries):
        program = program_with(link, commission_type="recurring_percent", duration_months=6)
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, program, **sale_body()).json()["commission_id"]
        # As above, plus 7 the customer's first commissioned sale (MIN over the customer's commissions).
        with django_assert_num_queries(10):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2", is_recurring=True))
        assert response.json()["commission_id"] == Commission.objects.latest("pk").pk

    def test_a_renewal_without_commission(self, api_client, program, customer, django_assert_num_queries):
        assert post_sale(api_client, program, **sale_body()).json()["commission_id"]
        # As a repeat sale, with 7 UPDATE sale no_commission_reason instead of the commission's INSERT.
        with django_assert_num_queries(9):
            response = post_sale(api_client, program, **sale_body(transaction_id="txn_2", is_recurring=True))
        assert response.json()["commission_id"] is None
