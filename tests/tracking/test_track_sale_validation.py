"""POST /api/v1/track/sale: the body checks (required and malformed fields) and the currencies."""

from datetime import timedelta

import pytest

from core import messages
from tests.helpers import bad_request, bearer, platform_error
from tests.tracking.sales import URL, metrics, nothing_recorded, post_sale, sale_body
from tracking.models import SaleEvent

pytestmark = pytest.mark.django_db


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
