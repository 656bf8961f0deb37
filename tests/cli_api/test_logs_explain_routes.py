"""GET /api/v1/cli/logs and GET /api/v1/cli/explain: the request log and attribution explained for the program
key's program, with the same bodies as the dashboard routes."""

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest

from insight.explain import EXPLAIN_SALE_NOT_FOUND
from programs.models import ApiCall
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bad_request, platform_error

from .conftest import bearer, error_of

pytestmark = pytest.mark.django_db

LOGS = "/api/v1/cli/logs"
EXPLAIN = "/api/v1/cli/explain"
T0 = datetime(2020, 3, 1, 12, 0, tzinfo=UTC)


def logged(program, *, status=200, route="track-sale", at=T0, **fields):
    return ApiCall.objects.create(program=program, created_at=at, method="POST", route=route, status=status, **fields)


class TestLogs:
    def test_it_lists_the_keys_programs_calls_with_filters_and_a_cursor(self, api_client, program):
        ok = logged(program, status=200, route="track-click")
        refused = logged(program, status=400, error_code="no_attribution", at=T0 + timedelta(minutes=1))
        logged(ProgramFactory(), status=400)
        body = api_client.get(LOGS, {"status": "4xx"}, **bearer(program.raw_api_key)).json()
        assert [row["id"] for row in body["data"]] == [refused.pk]
        assert body["data"][0]["error_code"] == "no_attribution"
        # Before today: the route's own calls (logged too) are not in the way.
        query = {"limit": "1", "until": "2020-03-02"}
        page = api_client.get(LOGS, query, **bearer(program.raw_api_key)).json()
        assert page["meta"]["next_cursor"] == str(refused.pk)
        query["cursor"] = page["meta"]["next_cursor"]
        older = api_client.get(LOGS, query, **bearer(program.raw_api_key))
        assert [row["id"] for row in older.json()["data"]] == [ok.pk]

    def test_its_own_answered_calls_are_not_logged_its_refusals_are_with_the_key_mask(self, api_client, program):
        # `svc logs --follow` polls it: logging its reads would fill the log it reads (docs/readiness.md).
        api_client.get(LOGS, **bearer(program.raw_test_api_key))
        api_client.get(LOGS, {"status": "4x"}, **bearer(program.raw_test_api_key))
        body = api_client.get(LOGS, {"route": "cli-logs"}, **bearer(program.raw_test_api_key)).json()
        [row] = body["data"]
        assert (row["route"], row["status"], row["key_mode"]) == ("cli-logs", 400, "test")
        assert program.raw_test_api_key not in str(body)

    def test_a_bad_filter_is_400(self, api_client, program):
        response = api_client.get(LOGS, {"status": "4x"}, **bearer(program.raw_api_key))
        assert response.status_code == 400
        assert response.json() == bad_request("status must be a class such as 4xx or a status code such as 404")

    def test_an_unknown_key_is_401(self, api_client):
        response = api_client.get(LOGS, **bearer("aff_nope"))
        assert response.status_code == 401
        assert error_of(response)["message"] == "Invalid API token"

    def test_a_login_token_is_not_a_program_key(self, api_client, login_token):
        assert api_client.get(LOGS, **bearer(login_token)).status_code == 401

    def test_its_500_carries_the_request_id(self, api_client, program):
        with mock.patch("cli_api.api.views.api_calls_list", side_effect=RuntimeError("boom")):
            response = api_client.get(LOGS, HTTP_X_REQUEST_ID="req-logs-001", **bearer(program.raw_api_key))
        assert response.status_code == 500
        assert response.json() == platform_error(
            500,
            "InternalServerError",
            "Failed to get the request log (request_id: req-logs-001)",
            details={"request_id": "req-logs-001"},
        )


class TestExplain:
    @pytest.fixture
    def sale(self, program):
        customer = CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
        return SaleFactory(customer=customer, processor_event_id="txn_1", attributed_by="customer_key")

    def test_it_answers_the_dashboard_routes_body(self, api_client, program, account, sale):
        response = api_client.get(EXPLAIN, {"transaction_id": "txn_1"}, **bearer(program.raw_api_key))
        assert response.status_code == 200
        api_client.force_login(account.user)
        dashboard = api_client.get(f"/api/tracking/explain/{program.pk}", {"transaction_id": "txn_1"})
        assert response.json() == dashboard.json()
        assert response.json()["data"]["attribution"]["matched_rule"] == "customer_key"

    def test_a_customer_by_key(self, api_client, program, sale):
        data = api_client.get(EXPLAIN, {"customer_key": "user_1"}, **bearer(program.raw_api_key)).json()["data"]
        assert data["kind"] == "customer" and data["customer"]["click_id"] == sale.customer.click_id

    def test_another_programs_sale_is_404(self, api_client, program):
        SaleFactory(processor_event_id="txn_other")
        response = api_client.get(EXPLAIN, {"transaction_id": "txn_other"}, **bearer(program.raw_api_key))
        assert response.status_code == 404
        assert response.json() == platform_error(404, "NotFoundError", EXPLAIN_SALE_NOT_FOUND)

    def test_two_selectors_are_400(self, api_client, program):
        response = api_client.get(EXPLAIN, {"transaction_id": "a", "click_id": "b"}, **bearer(program.raw_api_key))
        assert response.json() == bad_request("Give exactly one of transaction_id, click_id or customer_key")

    def test_without_a_key_it_is_401(self, api_client):
        assert api_client.get(EXPLAIN, {"transaction_id": "a"}).status_code == 401


def test_the_openapi_description_has_both_routes(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    logs = schema["paths"]["/api/v1/cli/logs"]["get"]
    assert {"status", "route", "error_code", "since", "cursor", "after", "limit"} <= {
        p["name"] for p in logs["parameters"]
    }
    explain = schema["paths"]["/api/v1/cli/explain"]["get"]
    assert {"200", "400", "401", "404", "500"} <= set(explain["responses"])
