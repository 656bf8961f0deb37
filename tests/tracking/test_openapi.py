"""The published OpenAPI (/api/schema/) is valid OpenAPI 3.1 and says what the API really does: real
responses are checked against the schema the description gives for their route and status."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from drf_spectacular.validation import validate_schema

from programs.models import ProgramKey, Role
from programs.services import program_key_mark_rotation
from tests.contract.schema import assert_documented
from tests.factories import MembershipFactory, ProgramFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

SALE = "/api/v1/track/sale"
REFUND = "/api/v1/track/refund"


@pytest.fixture
def schema(client) -> dict[str, Any]:
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def operation(schema: dict[str, Any], path: str, method: str = "post") -> dict[str, Any]:
    return schema["paths"][path][method]


def test_the_description_is_valid_openapi_3_1(schema):
    assert schema["openapi"] == "3.1.0"
    validate_schema(schema)


def test_the_openapi_description_covers_the_tracking_endpoints(schema):
    for path in ("/api/v1/track/click", "/api/v1/track/lead", SALE, REFUND):
        assert "post" in schema["paths"][path], path
    sale = operation(schema, SALE)
    assert sale["security"] == [{"programKey": []}]
    assert {"200", "400", "401", "409", "413", "422", "429", "500"} <= set(sale["responses"])
    assert {"transaction_id", "amount_cents"} <= set(schema["components"]["schemas"]["SaleInput"]["required"])
    assert schema["components"]["securitySchemes"]["programKey"]["scheme"] == "bearer"


def test_an_error_body_matches_platform_error_whose_data_is_null(schema, api_client):
    # data was `oneOf [{}, {type: null}]`: null matched both branches, so no error body was valid.
    assert schema["components"]["schemas"]["PlatformError"]["properties"]["data"]["type"] == "null"
    program = ProgramFactory()
    response = api_client.post(SALE, {"amount_cents": 100}, format="json", **bearer(program.raw_api_key))
    assert response.status_code == 400
    assert_documented(schema, SALE, "post", response)


def test_a_success_and_a_test_mode_success_match_the_documented_200(schema, api_client):
    program = ProgramFactory()
    test_sale = api_client.post(SALE, {}, format="json", **bearer(program.raw_test_api_key))
    assert test_sale.status_code == 200
    assert_documented(schema, SALE, "post", test_sale)
    test_refund = api_client.post(REFUND, {}, format="json", **bearer(program.raw_test_api_key))
    assert test_refund.json() == {"success": True, "test": True}
    assert_documented(schema, REFUND, "post", test_refund)


def test_a_retired_key_gets_the_documented_typed_401(schema, api_client):
    program = ProgramFactory()
    key = ProgramKey.objects.get(program=program, mode=ProgramKey.Mode.LIVE)
    program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(minutes=1))
    response = api_client.post(SALE, {}, format="json", **bearer(program.raw_api_key))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "api_key_rotation_required"
    assert_documented(schema, SALE, "post", response)


def test_lead_and_click_take_the_key_as_optional_sale_and_refund_require_it(schema):
    for path in ("/api/v1/track/lead", "/api/v1/track/click"):
        assert operation(schema, path)["security"] == [{"programKey": []}, {}], path
    for path in (SALE, REFUND):
        assert operation(schema, path)["security"] == [{"programKey": []}], path


def test_a_keyless_lead_is_answered_as_the_optional_security_says(schema, api_client):
    response = api_client.post("/api/v1/track/lead", {"click_id": "nobody"}, format="json")
    assert response.status_code == 400  # not 401: no key means browser mode
    assert_documented(schema, "/api/v1/track/lead", "post", response)


@pytest.mark.parametrize(
    "component, field, path, body",
    [
        ("SaleInput", "transaction_id", SALE, {"transaction_id": "", "amount_cents": 100}),
        ("RefundInput", "transaction_id", REFUND, {"transaction_id": ""}),
        ("ClickInput", "affiliate_url", "/api/v1/track/click", {"affiliate_url": ""}),
    ],
)
def test_required_strings_that_refuse_empty_say_min_length_1(schema, api_client, component, field, path, body):
    assert schema["components"]["schemas"][component]["properties"][field]["minLength"] == 1
    program = ProgramFactory()
    response = api_client.post(path, body, format="json", **bearer(program.raw_api_key))
    assert response.status_code == 400


def test_optional_strings_that_accept_empty_have_no_min_length(schema):
    sale = schema["components"]["schemas"]["SaleInput"]["properties"]
    assert "minLength" not in sale["customer_key"]
    assert "minLength" not in sale["click_id"]


def test_regenerate_key_documents_the_errors_it_returns(schema, api_client):
    path = "/api/programs/{program_id}/regenerate-key"
    assert {"200", "400", "401", "403", "404", "500"} <= set(operation(schema, path)["responses"])
    member = MembershipFactory(role=Role.MEMBER)
    program = ProgramFactory(workspace=member.workspace)
    url = f"/api/programs/{program.pk}/regenerate-key"
    assert_documented(schema, path, "post", signed_out := api_client.post(url, {}, format="json"))
    assert signed_out.status_code == 401
    api_client.force_login(member.user)
    forbidden = api_client.post(url, {}, format="json")
    assert forbidden.status_code == 403
    assert_documented(schema, path, "post", forbidden)
    missing = api_client.post("/api/programs/999999/regenerate-key", {}, format="json")
    assert missing.status_code == 404
    assert_documented(schema, path, "post", missing)
    not_a_number = api_client.post("/api/programs/abc/regenerate-key", {}, format="json")
    assert not_a_number.status_code == 404
    assert_documented(schema, path, "post", not_a_number)


def test_rate_limited_routes_document_429_retry_after_and_the_rate_limit_headers(schema):
    for path, methods in schema["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, described in methods.items():
            responses = described["responses"]
            assert "429" in responses, (method, path)
            assert responses["429"]["headers"]["Retry-After"]["required"] is True, (method, path)
            for status, response in responses.items():
                for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
                    assert response["headers"][name]["required"] is True, (method, path, status, name)


def test_a_real_429_matches_its_documentation(schema, api_client, settings):
    settings.RATELIMIT_SCALE = 1 / 120  # one sale or refund call per minute
    program = ProgramFactory()
    api_client.post(SALE, {}, format="json", **bearer(program.raw_api_key))
    response = api_client.post(SALE, {}, format="json", **bearer(program.raw_api_key))
    assert response.status_code == 429
    assert_documented(schema, SALE, "post", response)


def test_cli_status_documents_its_request_id_on_500_only(schema):
    responses = operation(schema, "/api/v1/cli/status", "get")["responses"]
    assert "X-Request-ID" in responses["500"]["headers"]
    assert "X-Request-ID" not in responses["200"]["headers"]
    assert "X-Request-ID" in operation(schema, SALE)["responses"]["200"]["headers"]


def test_sale_and_refund_inputs_are_described_for_integrators(schema):
    components = schema["components"]["schemas"]
    for name in ("SaleInput", "RefundInput", "ClickInput", "LeadInput"):
        description = components[name]["description"]
        # Was LeanSerializer's note about DRF deep-copying fields.
        assert "deep-cop" not in description and "DRF" not in description, name
    assert "transaction_id" in components["SaleInput"]["description"]
    assert "refund_amount_cents" in components["RefundInput"]["description"]
    assert "Documentation only" not in components["PatchedSettingsPatch"]["description"]


def test_the_settings_patch_needs_at_least_one_field(schema):
    patch = operation(schema, "/api/v1/programs/{program_id}/settings", "patch")
    assert schema["components"]["schemas"]["PatchedSettingsPatch"]["minProperties"] == 1
    assert "Empty patch" in patch["responses"]["400"]["description"]


def test_requests_refused_before_the_view_match_the_route_documentation(schema, api_client):
    program = ProgramFactory()
    readiness = "/api/v1/programs/me/readiness"
    nul = api_client.get(readiness, {"x": "a\x00b"}, **bearer(program.raw_api_key))
    assert nul.status_code == 400
    assert_documented(schema, readiness, "get", nul)  # the typed envelope, as readiness' other errors
    long_url = api_client.post(f"{SALE}?pad={'a' * 9000}", {}, format="json", **bearer(program.raw_api_key))
    assert long_url.status_code == 414
    assert_documented(schema, SALE, "post", long_url)
