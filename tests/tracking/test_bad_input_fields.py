"""Field by field, the way an attacker probes the tracking routes: wrong JSON types, huge strings, digits of other
scripts, amounts past the ceiling, a percent-encoded NUL inside a URL. Each is a 4xx in the route's envelope and
stores nothing; none is a 500 (which the spec tells callers to retry, so a sale client would loop)."""

import logging
from typing import Any

import pytest
from rest_framework import serializers

from commissions.models import Commission
from core import messages
from core.api.fields import IdField, JsonObjectField, StrictBooleanField, StrictIntegerField
from tests.core.bad_input_routes import Route, stored_rows
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bearer
from tests.stripe_payloads import ACCOUNT, checkout_session, event, post_event
from tests.tracking.sales import metrics
from tracking.amounts import MAX_AMOUNT_CENTS
from tracking.api.serializers import (
    ClickInputSerializer,
    LeadInputSerializer,
    RefundInputSerializer,
    SaleInputSerializer,
)
from tracking.api.tracker import VisitTrackApi
from tracking.models import ClickEvent, PageVisit, ProcessorEvent, SaleEvent

pytestmark = pytest.mark.django_db

CLICK = Route("post", "/api/v1/track/click", "none")
LEAD = Route("post", "/api/v1/track/lead", "key")
SALE = Route("post", "/api/v1/track/sale", "key", coded=True)
REFUND = Route("post", "/api/v1/track/refund", "key", coded=True)
VISIT = Route("post", "/api/v1/track/visit", "none")
SERIALIZERS: dict[Route, type[serializers.Serializer[Any]]] = {
    CLICK: ClickInputSerializer,
    LEAD: LeadInputSerializer,
    SALE: SaleInputSerializer,
    REFUND: RefundInputSerializer,
    VISIT: VisitTrackApi.InputSerializer,
}


class Shop:
    """A program with a link, a clicked customer (for leads), a lead customer `user_1` (for sales) and a
    recorded sale `txn_paid` (for refunds); `body(route)` is a body each route accepts."""

    def __init__(self):
        self.program = ProgramFactory(commission_type="percent")
        self.link = ReferralLinkFactory(program=self.program)
        self.clicked = CustomerFactory(link=self.link)
        self.lead = CustomerFactory(link=self.link, customer_key="user_1", customer_status="lead")
        SaleFactory(customer=self.lead, processor_event_id="txn_paid")

    def body(self, route: Route) -> dict[str, Any]:
        return {
            CLICK: {"affiliate_url": f"https://shop.test/?aff={self.link.short_link}"},
            LEAD: {"click_id": self.clicked.click_id, "customer_key": "user_2"},
            SALE: {"transaction_id": "txn_new", "amount_cents": 1000, "customer_key": "user_1"},
            REFUND: {"transaction_id": "txn_paid"},
            VISIT: {"program_id": self.program.pk, "page_url": "https://shop.test/"},
        }[route]

    def post(self, route: Route, body: dict[str, Any], *, key: str | None = None):
        from rest_framework.test import APIClient

        client = APIClient()
        if route.auth == "key":
            client.credentials(**bearer(key or self.program.raw_api_key))
        self.rows_before = stored_rows()
        return client.post(route.path, body, format="json")

    def assert_refused(self, route: Route, response, message: str | None = None, status: int = 400) -> None:
        assert response.status_code == status, response.content
        error = response.json()["error"]
        assert response.json()["data"] is None and error["status"] == status
        assert ("code" in error) == route.coded
        if message is not None:
            assert error["message"] == message
        assert stored_rows() == self.rows_before, "a refused request stored something"


@pytest.fixture
def shop() -> Shop:
    return Shop()


def non_ascii(number: int, digits: str) -> str:
    """`number` written with another script's digits (Arabic-Indic, fullwidth, superscript)."""
    return str(number).translate(str.maketrans("0123456789", digits))


ARABIC_INDIC = "٠١٢٣٤٥٦٧٨٩"
FULLWIDTH = "０１２３４５６７８９"
SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹"
SCRIPTS = [ARABIC_INDIC, FULLWIDTH, SUPERSCRIPT]


@pytest.mark.parametrize("route", list(SERIALIZERS), ids=str)
def test_the_base_bodies_are_accepted(shop, route):
    """So that each refusal below is the changed field's doing."""
    response = shop.post(route, shop.body(route))
    assert response.status_code == 200, response.content


def wrong_values(field) -> list[Any]:
    """JSON values of every type the field does not take."""
    if isinstance(field, StrictIntegerField):
        return ["100", 1.5, True, [], {}, "１００"]
    if isinstance(field, StrictBooleanField):
        return [1, 0, "true", [], {}]
    if isinstance(field, IdField):
        return [1.5, True, [], {}]
    if isinstance(field, JsonObjectField):
        return [[], "x", 1, True]
    return [[], {}, 12, 1.5, True]  # strings, choices, email


TYPED_FIELDS = [
    (route, name, value)
    for route, serializer in SERIALIZERS.items()
    for name, field in serializer._declared_fields.items()
    if name not in ("visitor_ip", "line_items")  # any JSON by design: used only when it is a valid IP / object
    for value in wrong_values(field)
]


@pytest.mark.parametrize(
    ("route", "field", "value"), TYPED_FIELDS, ids=[f"{r.path.rsplit('/', 1)[1]}-{f}-{v!r}" for r, f, v in TYPED_FIELDS]
)
def test_a_wrong_json_type_is_400(shop, route, field, value):
    response = shop.post(route, {**shop.body(route), field: value})
    shop.assert_refused(route, response)


@pytest.mark.parametrize("value", ["x", 1, True, 1.5])
def test_line_items_must_be_an_object_or_a_list(shop, value):
    response = shop.post(SALE, {**shop.body(SALE), "line_items": value})
    shop.assert_refused(SALE, response, "line_items must be an object or a list")


STRING_FIELDS = [
    (route, name)
    for route, serializer in SERIALIZERS.items()
    for name, field in serializer._declared_fields.items()
    if name not in ("visitor_ip", "line_items", "additional_data", "program_id")
    and not isinstance(field, StrictIntegerField | StrictBooleanField)
]


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("route", "field"), STRING_FIELDS, ids=[f"{r.path.rsplit('/', 1)[1]}-{f}" for r, f in STRING_FIELDS]
)
@pytest.mark.parametrize("length", [256, 1024 * 1024])
def test_a_huge_string_is_400_not_a_database_error(shop, route, field, length):
    """No string reaches a varchar column longer than the column (a DataError on PostgreSQL)."""
    response = shop.post(route, {**shop.body(route), field: "a" * length})
    if response.status_code == 200:
        assert length <= 4096, f"{field} took {length} characters"
        return
    shop.assert_refused(route, response)


@pytest.mark.postgres
def test_an_email_longer_than_its_column_is_400(shop):
    email = "a" * 64 + "@" + ".".join(["b" * 60] * 4) + ".com"  # 320 characters: Django's validator allows it
    response = shop.post(LEAD, {**shop.body(LEAD), "email": email})
    shop.assert_refused(LEAD, response, "email must be a valid email address")


class TestNonAsciiDigits:
    @pytest.mark.parametrize("digits", SCRIPTS)
    def test_click_refuses_program_id_in_other_digits(self, shop, digits):
        response = shop.post(CLICK, {**shop.body(CLICK), "program_id": non_ascii(shop.program.pk, digits)})
        shop.assert_refused(CLICK, response, messages.UNKNOWN_PROGRAM_ID)

    @pytest.mark.parametrize("value", ["²", "١", "1²", " ٣ "])
    def test_click_refuses_other_digits_whatever_the_program(self, shop, value):
        response = shop.post(CLICK, {**shop.body(CLICK), "program_id": value})
        shop.assert_refused(CLICK, response, messages.UNKNOWN_PROGRAM_ID)

    def test_click_still_takes_ascii_digits_in_a_string(self, shop):
        response = shop.post(CLICK, {**shop.body(CLICK), "program_id": f" {shop.program.pk} "})
        assert response.status_code == 200 and ClickEvent.objects.count() == 1

    @pytest.mark.parametrize("digits", SCRIPTS)
    def test_visit_refuses_program_id_in_other_digits(self, shop, digits):
        response = shop.post(VISIT, {**shop.body(VISIT), "program_id": non_ascii(shop.program.pk, digits)})
        shop.assert_refused(VISIT, response, messages.UNKNOWN_PROGRAM_ID)
        assert not PageVisit.objects.exists()

    @pytest.mark.parametrize("digits", SCRIPTS)
    def test_config_refuses_program_id_in_other_digits(self, shop, api_client, digits):
        response = api_client.get("/api/v1/track/config", {"program_id": non_ascii(shop.program.pk, digits)})
        assert response.status_code == 404
        assert response.json()["error"]["message"] == messages.UNKNOWN_PROGRAM_ID

    @pytest.mark.parametrize("value", [2**63, 10**30, -1, 0])
    def test_ids_outside_a_bigint_are_unknown_not_an_overflow(self, shop, api_client, value):
        response = shop.post(VISIT, {**shop.body(VISIT), "program_id": value})
        shop.assert_refused(VISIT, response, messages.UNKNOWN_PROGRAM_ID)
        response = shop.post(CLICK, {**shop.body(CLICK), "program_id": value})
        shop.assert_refused(CLICK, response, messages.UNKNOWN_PROGRAM_ID)
        assert api_client.get("/api/v1/track/config", {"program_id": value}).status_code == 404

    @pytest.mark.parametrize("digits", SCRIPTS)
    def test_a_test_mode_lead_refuses_its_own_program_in_other_digits(self, shop, digits):
        """`"١"` used to be read as program 1: a test lead naming another program passed the key check."""
        additional = {"test_mode": True, "program_id": non_ascii(shop.program.pk, digits)}
        response = shop.post(LEAD, {**shop.body(LEAD), "additional_data": additional})
        shop.assert_refused(LEAD, response, messages.PROGRAM_ID_MISMATCH, status=403)

    @pytest.mark.parametrize("digits", SCRIPTS)
    def test_a_test_mode_click_refuses_it_too(self, shop, digits):
        additional = {"test_mode": True, "program_id": non_ascii(shop.program.pk, digits)}
        body = {**shop.body(CLICK), "additional_data": additional}
        response = shop.post(Route("post", CLICK.path, "key"), body)
        shop.assert_refused(CLICK, response, messages.PROGRAM_ID_MISMATCH, status=403)

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("screen_resolution", "²x1", "screen_resolution must look like 1920x1080"),
            ("screen_resolution", "١٩٢٠x١٠٨٠", "screen_resolution must look like 1920x1080"),
            ("screen_resolution", "1920x", "screen_resolution must look like 1920x1080"),
            ("viewport_size", "1280x７２０", "viewport_size must look like 1280x720"),
            ("viewport_size", "x720", "viewport_size must look like 1280x720"),
        ],
    )
    def test_dimensions_take_ascii_digits_only(self, shop, field, value, message):
        response = shop.post(CLICK, {**shop.body(CLICK), field: value})
        shop.assert_refused(CLICK, response, message)

    def test_dimensions_are_still_normalised(self, shop):
        response = shop.post(CLICK, {**shop.body(CLICK), "screen_resolution": "01920X1080"})
        assert response.status_code == 200
        assert ClickEvent.objects.get().screen_resolution == "1920x1080"


class TestAmountCeiling:
    def test_the_ceiling_is_accepted_and_commissioned(self, shop):
        response = shop.post(SALE, {**shop.body(SALE), "amount_cents": MAX_AMOUNT_CENTS})
        assert response.status_code == 200, response.content
        assert SaleEvent.objects.get(processor_event_id="txn_new").amount_cents == MAX_AMOUNT_CENTS
        assert Commission.objects.get().amount_cents == MAX_AMOUNT_CENTS // 5

    @pytest.mark.parametrize("amount", [MAX_AMOUNT_CENTS + 1, 2**63 - 1, 2**63, 10**30])
    def test_a_sale_above_it_is_refused_with_the_spec_message(self, shop, amount):
        response = shop.post(SALE, {**shop.body(SALE), "amount_cents": amount})
        shop.assert_refused(SALE, response, messages.SALE_AMOUNT_REQUIRED)
        assert not Commission.objects.exists()

    @pytest.mark.parametrize("amount", [MAX_AMOUNT_CENTS + 1, 2**63 - 1])
    def test_a_test_mode_sale_above_it_is_refused(self, shop, amount):
        response = shop.post(SALE, {**shop.body(SALE), "amount_cents": amount}, key=shop.program.raw_test_api_key)
        shop.assert_refused(SALE, response, messages.SALE_AMOUNT_REQUIRED)

    def test_tax_above_it_is_refused(self, shop):
        response = shop.post(SALE, {**shop.body(SALE), "tax_cents": MAX_AMOUNT_CENTS + 1})
        shop.assert_refused(SALE, response, "tax_cents is too large")

    def test_a_refund_above_it_is_refused(self, shop):
        response = shop.post(REFUND, {**shop.body(REFUND), "refund_amount_cents": MAX_AMOUNT_CENTS + 1})
        shop.assert_refused(
            REFUND, response, "refund_amount_cents must be a positive integer (0 or omitted refunds the rest)"
        )

    @pytest.mark.postgres
    def test_partner_metrics_at_the_ceiling_add_up_exactly(self, shop):
        """2^63 - 1 once overflowed the partner's revenue counter ("bigint out of range", only logged); the rollup
        run now adds the sales to it."""
        _, revenue_before = metrics(shop.link)
        for n in range(3):
            CustomerFactory(link=shop.link, customer_key=f"big_{n}", customer_status="lead")
            body = {"transaction_id": f"txn_big_{n}", "amount_cents": MAX_AMOUNT_CENTS, "customer_key": f"big_{n}"}
            assert shop.post(SALE, body).status_code == 200
        assert metrics(shop.link)[1] - revenue_before == 3 * MAX_AMOUNT_CENTS
        assert Commission.objects.count() == 3

    def test_the_openapi_description_names_the_ceiling(self, api_client):
        schema = api_client.get("/api/schema/", {"format": "json"}).json()
        properties = {
            name: schema["components"]["schemas"][component]["properties"][name]
            for component, name in [
                ("SaleInput", "amount_cents"),
                ("SaleInput", "tax_cents"),
                ("RefundInput", "refund_amount_cents"),
            ]
        }
        assert all(prop["maximum"] == MAX_AMOUNT_CENTS for prop in properties.values()), properties


@pytest.mark.usefixtures("stripe_webhook_secret")
class TestStripeAmounts:
    def deliver(self, client, django_capture_on_commit_callbacks, amount: int, customer) -> ProcessorEvent:
        payload = event(
            "checkout.session.completed",
            checkout_session(amount=amount, metadata={"svc_click_id": customer.click_id}),
        )
        with django_capture_on_commit_callbacks(execute=True):
            response = post_event(client, payload)
        assert response.status_code == 200, response.content
        return ProcessorEvent.objects.get(event_id=payload["id"])

    @pytest.mark.parametrize("amount", [MAX_AMOUNT_CENTS + 1, 2**63 - 1, 10**30])
    def test_a_payment_above_the_ceiling_is_ignored_and_logged(
        self, client, django_capture_on_commit_callbacks, caplog, amount
    ):
        program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0)
        customer = CustomerFactory(link=ReferralLinkFactory(program=program))
        with caplog.at_level(logging.WARNING, logger="svc.stripe"):
            stored = self.deliver(client, django_capture_on_commit_callbacks, amount, customer)
        assert stored.status == "ignored" and "above the ceiling" in stored.outcome
        assert not SaleEvent.objects.exists() and not Commission.objects.exists()
        assert [r.message for r in caplog.records if r.levelno == logging.WARNING] == ["stripe.amount_out_of_range"]

    def test_a_payment_at_the_ceiling_is_recorded(self, client, django_capture_on_commit_callbacks):
        program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0)
        customer = CustomerFactory(link=ReferralLinkFactory(program=program))
        stored = self.deliver(client, django_capture_on_commit_callbacks, MAX_AMOUNT_CENTS, customer)
        assert stored.status == "processed"
        assert SaleEvent.objects.get().amount_cents == MAX_AMOUNT_CENTS


class TestNulInsideUrls:
    @pytest.mark.parametrize("query", ["aff=%00", "aff=code%00", "via=%00", "aff=%00&via=x"])
    def test_a_nul_referral_code_is_an_invalid_affiliate_url(self, shop, query):
        response = shop.post(CLICK, {"affiliate_url": f"https://shop.test/?{query}"})
        shop.assert_refused(CLICK, response, messages.INVALID_AFFILIATE_URL)

    def test_a_nul_utm_value_is_left_out_of_the_visit(self, shop):
        page = "https://shop.test/?utm_source=%00&utm_medium=cpc&utm_campaign=spring%00sale"
        response = shop.post(VISIT, {**shop.body(VISIT), "page_url": page})
        assert response.status_code == 200
        visit = PageVisit.objects.get()
        assert (visit.utm_source, visit.utm_medium, visit.utm_campaign, visit.page_url) == ("", "cpc", "", page)
