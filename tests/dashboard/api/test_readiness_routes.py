"""GET /api/v1/programs/me/readiness (program key, typed envelope) and GET /api/tracking/readiness/:programId
(dashboard session). Both answer readiness_compute; its checks are tested in tests/tracking/test_readiness.py."""

import time
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone

from core import messages
from insight.readiness import readiness_compute
from programs.models import ProgramKey
from programs.services import program_key_mark_rotation
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

URL = "/api/v1/programs/me/readiness"


def without_time(verdict: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in verdict.items() if name != "checked_at"}


class TestProgramKeyRoute:
    def test_it_answers_the_verdict_with_no_success_field(self, api_client, program):
        ReferralLinkFactory(program=program)
        response = api_client.get(URL, HTTP_X_REQUEST_ID="req-readiness-1", **bearer(program.raw_api_key))
        assert response.status_code == 200
        body = response.json()
        assert "success" not in body and "data" not in body
        key = ProgramKey.objects.get(program=program, mode="live")
        expected = readiness_compute(program=program, key=key, base_url="https://track.example.test")
        assert without_time(body) == without_time(expected)
        assert body["program_id"] == program.pk
        assert response["X-Request-ID"] == "req-readiness-1"
        assert response["X-RateLimit-Limit"] == "30"
        assert response["X-RateLimit-Remaining"] == "29"
        assert 'src="https://track.example.test/js/svc-tracker.js"' in body["next_step"]

    def test_the_test_key_answers_for_its_program(self, api_client, program):
        response = api_client.get(URL, **bearer(program.raw_test_api_key))
        assert response.status_code == 200
        body = response.json()
        assert body["program_id"] == program.pk
        key_check = next(check for check in body["checks"] if check["id"] == "key_health")
        test_key = ProgramKey.objects.get(program=program, mode="test")
        assert key_check["detail"] == f"{test_key.masked} is healthy"

    @pytest.mark.parametrize(
        ("header", "message"),
        [
            (None, "Missing or malformed Authorization header. Expected: Bearer <token>."),
            ("Basic abc", "Missing or malformed Authorization header. Expected: Bearer <token>."),
            ("Bearer ", "Missing API token."),
            ("Bearer aff_nope", "Invalid API token."),
        ],
    )
    def test_it_answers_invalid_key_in_the_typed_envelope(self, api_client, header, message):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        response = api_client.get(URL, **extra)
        assert response.status_code == 401
        assert response.json() == {"error": {"code": "invalid_key", "message": message}}
        assert response["X-Request-ID"]

    def test_a_session_does_not_authenticate_it(self, owner):
        response = owner.get(URL)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "invalid_key"

    def test_a_retired_key_gets_rotation_required(self, api_client, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(seconds=1))
        response = api_client.get(URL, **bearer(program.raw_api_key))
        assert response.status_code == 401
        body = response.json()
        assert body["error"]["code"] == "api_key_rotation_required"
        assert set(body["error"]) == {"code", "message", "hint", "docs_url"}

    def test_a_flagged_key_gets_the_verdict_with_warnings(self, api_client, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() + timedelta(days=3))
        response = api_client.get(URL, **bearer(program.raw_api_key))
        assert response.status_code == 200
        body = response.json()
        assert [warning["code"] for warning in body["warnings"]] == ["api_key_rotation_required"]
        key_check = next(check for check in body["checks"] if check["id"] == "key_health")
        assert key_check["status"] == "warn"
        assert response.has_header("Deprecation") and response.has_header("Sunset")

    def test_a_failure_is_a_typed_500_with_retry_after(self, api_client, program):
        with mock.patch("insight.api.readiness_compute", side_effect=RuntimeError("password=hunter2")):
            response = api_client.get(URL, **bearer(program.raw_api_key))
        assert response.status_code == 500
        assert response.json() == {
            "error": {"code": "internal_error", "message": messages.READINESS_FAILED, "retry_after_seconds": 10}
        }
        assert response["X-Request-ID"]

    def test_it_is_limited_to_30_per_minute_per_key(self, api_client, program):
        other = ProgramFactory()
        for _ in range(30):
            assert api_client.get(URL, **bearer(program.raw_api_key)).status_code == 200
        response = api_client.get(URL, **bearer(program.raw_api_key))
        assert response.status_code == 429
        body = response.json()
        assert body["error"]["code"] == "rate_limited"
        assert body["error"]["status"] == 429
        assert 1 <= body["error"]["retry_after_seconds"] <= 60
        assert int(response["Retry-After"]) == body["error"]["retry_after_seconds"]
        assert int(response["X-RateLimit-Reset"]) >= int(time.time())
        assert api_client.get(URL, **bearer(other.raw_api_key)).status_code == 200

    def test_it_only_answers_get(self, api_client, program):
        response = api_client.post(URL, {}, format="json", **bearer(program.raw_api_key))
        assert response.status_code == 405
        assert response.json()["error"]["code"] == "method_not_allowed"


class TestDashboardRoute:
    def test_it_answers_the_verdict_in_data(self, owner, program):
        ReferralLinkFactory(program=program)
        response = owner.get(f"/api/tracking/readiness/{program.pk}")
        assert response.status_code == 200
        data = response.json()["data"]
        expected = readiness_compute(program=program, base_url="https://track.example.test")
        assert without_time(data) == without_time(expected)
        live_key = ProgramKey.objects.get(program=program, mode="live")
        key_check = next(check for check in data["checks"] if check["id"] == "key_health")
        assert key_check["detail"] == f"{live_key.masked} is healthy"

    def test_without_a_public_base_url_it_uses_the_requests_host(self, owner, program, settings):
        settings.PUBLIC_BASE_URL = ""
        ReferralLinkFactory(program=program)
        data = owner.get(f"/api/tracking/readiness/{program.pk}").json()["data"]
        assert 'src="http://testserver/js/svc-tracker.js"' in data["next_step"]
