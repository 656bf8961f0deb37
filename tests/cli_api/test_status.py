"""GET /api/v1/cli/status: readiness with the program key; X-Request-ID on its 500 only."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from insight.readiness import readiness_compute
from programs.services import program_key_mark_rotation
from tests.factories import ReferralLinkFactory
from tests.helpers import platform_error

from .conftest import STATUS, bearer, error_of

pytestmark = pytest.mark.django_db


def test_it_reports_the_programs_readiness(api_client, program):
    ReferralLinkFactory(program=program)

    response = api_client.get(STATUS, **bearer(program.raw_api_key))

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["program"] == {"id": program.pk, "name": program.name, "domain": program.domain}
    assert data["key"] == {"mode": "live", "masked": program.api_token_masked}
    expected = readiness_compute(program=program, base_url="https://track.example.test")
    assert {k: v for k, v in data["readiness"].items() if k != "checked_at"} == {
        k: v for k, v in expected.items() if k != "checked_at"
    }
    assert [c["id"] for c in data["readiness"]["checks"]][0] == "referral_links"
    assert data["readiness"]["checks"][0]["status"] == "pass"
    assert 'src="https://track.example.test/js/svc-tracker.js"' in data["readiness"]["checks"][1]["next_step"]
    assert not response.has_header("X-Request-ID")
    assert response["X-RateLimit-Limit"] == "60"


def test_the_test_key_works_and_is_reported(api_client, program):
    data = api_client.get(STATUS, **bearer(program.raw_test_api_key)).json()["data"]
    assert data["key"]["mode"] == "test"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "Missing or malformed Authorization header. Expected: Bearer <token>"),
        ({"HTTP_AUTHORIZATION": "Bearer "}, "Missing API token"),
        ({"HTTP_AUTHORIZATION": "Bearer aff_nope"}, "Invalid API token"),
    ],
)
def test_a_missing_or_unknown_key_is_a_401_without_a_request_id(api_client, headers, message):
    response = api_client.get(STATUS, **headers)
    assert response.status_code == 401
    assert error_of(response)["message"] == message
    assert not response.has_header("X-Request-ID")


def test_a_login_token_is_not_a_program_key(api_client, login_token):
    assert api_client.get(STATUS, **bearer(login_token)).status_code == 401


def test_its_429_has_no_request_id(api_client, program):
    for _ in range(60):
        assert api_client.get(STATUS, **bearer(program.raw_api_key)).status_code == 200
    response = api_client.get(STATUS, **bearer(program.raw_api_key))
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert not response.has_header("X-Request-ID")


def test_its_500_carries_the_request_id(api_client, program):
    with mock.patch("cli_api.api.views.readiness_compute", side_effect=RuntimeError("boom")):
        response = api_client.get(STATUS, HTTP_X_REQUEST_ID="req-status-001", **bearer(program.raw_api_key))
    assert response.status_code == 500
    assert response["X-Request-ID"] == "req-status-001"
    assert response.json() == platform_error(
        500,
        "InternalServerError",
        "Failed to get program status (request_id: req-status-001)",
        details={"request_id": "req-status-001"},
    )


def test_a_key_marked_for_rotation_warns(api_client, program):
    program_key_mark_rotation(key=program.keys.get(mode="live"), deadline=timezone.now() + timedelta(days=7))
    response = api_client.get(STATUS, **bearer(program.raw_api_key))
    assert response.status_code == 200
    assert response.json()["warnings"][0]["code"] == "api_key_rotation_required"
    assert response.has_header("Sunset")
    assert response.json()["data"]["readiness"]["checks"][4]["status"] == "warn"
