"""GET /api/tracking/explain/:programId?transaction_id=|click_id=|customer_key=: attribution explained for a
signed-in member (tracking:list). The explanation itself is tested in tests/tracking/test_explain.py."""

import pytest

from core import messages
from insight.explain import EXPLAIN_CUSTOMER_NOT_FOUND, EXPLAIN_SALE_NOT_FOUND
from programs.models import Role
from tests.factories import CustomerFactory, ReferralLinkFactory, SaleFactory, UserFactory
from tests.helpers import bad_request, platform_error

pytestmark = pytest.mark.django_db

ONE_SELECTOR = "Give exactly one of transaction_id, click_id or customer_key"


def explain(client, program_id, **params):
    return client.get(f"/api/tracking/explain/{program_id}", params)


@pytest.fixture
def customer(program):
    return CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")


@pytest.fixture
def sale(customer):
    return SaleFactory(customer=customer, processor_event_id="txn_1", attributed_by="customer_key")


class TestAccess:
    def test_signed_out_is_401(self, api_client, program, sale):
        response = explain(api_client, program.pk, transaction_id="txn_1")
        assert response.status_code == 401
        assert response.json() == platform_error(401, "UnauthorizedError", messages.AUTHENTICATION_REQUIRED)

    def test_a_program_key_is_not_a_session(self, api_client, program, sale):
        response = api_client.get(
            f"/api/tracking/explain/{program.pk}",
            {"transaction_id": "txn_1"},
            HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}",
        )
        assert response.status_code == 401

    def test_no_membership_is_403(self, api_client, program, sale):
        api_client.force_login(UserFactory())
        response = explain(api_client, program.pk, transaction_id="txn_1")
        assert response.status_code == 403
        assert response.json() == platform_error(403, "ForbiddenError", messages.PERMISSION_DENIED)

    @pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN, Role.MEMBER])
    def test_every_role_that_lists_tracking_may_read_it(self, sign_in, program, sale, role):
        assert explain(sign_in(program, role), program.pk, transaction_id="txn_1").status_code == 200

    def test_an_unknown_program_is_404(self, owner, program):
        response = explain(owner, program.pk + 1000, transaction_id="txn_1")
        assert response.status_code == 404
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND)


class TestSelectors:
    @pytest.mark.parametrize(
        "params",
        [
            {},
            {"transaction_id": ""},
            {"transaction_id": "txn_1", "click_id": "cust_1"},
            {"click_id": "cust_1", "customer_key": "user_1"},
        ],
    )
    def test_zero_or_two_selectors_are_400(self, owner, program, params):
        response = explain(owner, program.pk, **params)
        assert response.status_code == 400
        assert response.json() == bad_request(ONE_SELECTOR)

    def test_a_too_long_selector_is_400_naming_it(self, owner, program):
        response = explain(owner, program.pk, click_id="c" * 256)
        assert response.json() == bad_request("click_id must be a string of at most 255 characters")


class TestAnswers:
    def test_a_sale(self, owner, program, sale):
        response = explain(owner, program.pk, transaction_id="txn_1")
        assert response.status_code == 200
        assert response["Cache-Control"] == "private, no-store"
        data = response.json()["data"]
        assert (data["kind"], data["transaction_id"], data["attribution"]["matched_rule"]) == (
            "sale",
            "txn_1",
            "customer_key",
        )
        assert data["sale"]["amount_cents"] == 10000
        assert data["commission"]["arithmetic"]["sale_amount_cents"] == 10000
        assert data["sale"]["sale_date"].endswith("Z")  # times are ISO 8601 in UTC

    def test_a_customer_by_click_id_and_by_customer_key(self, owner, program, customer, sale):
        by_click = explain(owner, program.pk, click_id=customer.click_id).json()["data"]
        by_key = explain(owner, program.pk, customer_key="user_1").json()["data"]
        assert by_click["kind"] == "customer" and by_click["customer"]["click_id"] == customer.click_id
        assert by_key["customer"]["click_id"] == customer.click_id
        assert [s["explain"] for s in by_click["sales"]] == [{"transaction_id": "txn_1"}]

    def test_unknown_selectors_are_404(self, owner, program):
        assert explain(owner, program.pk, transaction_id="nope").json() == platform_error(
            404, "NotFoundError", EXPLAIN_SALE_NOT_FOUND
        )
        for params in ({"click_id": "nope"}, {"customer_key": "nope"}):
            response = explain(owner, program.pk, **params)
            assert response.status_code == 404
            assert response.json() == platform_error(404, "NotFoundError", EXPLAIN_CUSTOMER_NOT_FOUND)

    def test_another_programs_sale_and_customer_are_not_visible(self, owner, program):
        other = SaleFactory(processor_event_id="txn_other")
        assert explain(owner, program.pk, transaction_id="txn_other").status_code == 404
        assert explain(owner, program.pk, click_id=other.customer.click_id).status_code == 404
        # Nor through the other program's id, which the member has no role in.
        assert explain(owner, other.program_id, transaction_id="txn_other").status_code == 403

    def test_the_openapi_description_has_the_route(self, client):
        schema = client.get("/api/schema/", {"format": "json"}).json()
        operation = schema["paths"]["/api/tracking/explain/{program_id}"]["get"]
        assert operation["security"] == [{"dashboardSession": []}]
        assert {"200", "400", "401", "403", "404"} <= set(operation["responses"])
        assert {"program_id", "transaction_id", "click_id", "customer_key"} <= {
            p["name"] for p in operation["parameters"]
        }
        assert {"SaleExplanation", "CustomerExplanation"} <= set(schema["components"]["schemas"])
