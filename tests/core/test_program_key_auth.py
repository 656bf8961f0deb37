from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from core import messages
from programs.models import ProgramKey
from programs.services import program_key_install, program_key_mark_rotation, program_key_regenerate
from tests.core.urls import CALLS
from tests.factories import ProgramFactory, legacy_key
from tests.helpers import bearer

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.urls")]


def platform_401(message: str, code: str | None = "unauthorized") -> dict[str, Any]:
    error = {"status": 401, "name": "UnauthorizedError", "message": message, "details": {}}
    if code:
        error["code"] = code
    return {"data": None, "error": error}


@pytest.fixture
def program():
    return ProgramFactory()


class TestRequiredKey:
    def test_it_accepts_the_live_key(self, api_client, program):
        response = api_client.post("/t/required", {}, format="json", **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert response.json() == {"success": True, "program_id": program.pk, "test": False}

    def test_it_marks_the_test_key_as_test(self, api_client, program):
        response = api_client.post("/t/required", {}, format="json", **bearer(program.raw_test_api_key))
        assert response.json()["test"] is True

    def test_it_accepts_a_legacy_key_without_prefix(self, api_client, program):
        raw = legacy_key()
        assert not raw.startswith("aff_")
        program_key_install(program=program, raw_key=raw)
        response = api_client.post("/t/required", {}, format="json", **bearer(raw))
        assert response.status_code == 200

    @pytest.mark.parametrize("header", [None, "Basic abc", "Token aff_x", "bearerx"])
    def test_it_refuses_a_missing_or_malformed_header(self, api_client, header):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        response = api_client.post("/t/required", {}, format="json", **extra)
        assert response.status_code == 401
        assert response.json() == platform_401(messages.MISSING_AUTH_HEADER)
        assert response["WWW-Authenticate"] == "Bearer"

    @pytest.mark.parametrize("header", ["Bearer", "Bearer ", "Bearer    "])
    def test_it_refuses_an_empty_token(self, api_client, header):
        response = api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=header)
        assert response.json() == platform_401(messages.MISSING_API_TOKEN)

    def test_refund_answers_invalid_token_for_an_empty_token(self, api_client):
        response = api_client.post("/t/refund-like", {}, format="json", HTTP_AUTHORIZATION="Bearer ")
        assert response.json() == platform_401(messages.INVALID_API_TOKEN)

    def test_it_refuses_an_unknown_token(self, api_client, program):
        response = api_client.post("/t/required", {}, format="json", **bearer(program.raw_api_key + "x"))
        assert response.json() == platform_401(messages.INVALID_API_TOKEN)

    def test_the_key_check_is_exact(self, api_client, program):
        response = api_client.post("/t/required", {}, format="json", **bearer(program.raw_api_key.upper()))
        assert response.status_code == 401

    def test_a_refused_request_never_reaches_the_view(self, api_client):
        CALLS.clear()
        api_client.post("/t/required", {}, format="json", **bearer("aff_nope"))
        assert CALLS == []


class TestOptionalKey:
    def test_no_header_is_browser_mode(self, api_client):
        response = api_client.post("/t/optional", {}, format="json")
        assert response.json() == {"success": True, "server_mode": False}

    def test_an_empty_bearer_falls_back_to_browser_mode(self, api_client):
        response = api_client.post("/t/optional", {}, format="json", HTTP_AUTHORIZATION="Bearer ")
        assert response.json() == {"success": True, "server_mode": False}

    def test_a_valid_key_is_server_mode(self, api_client, program):
        response = api_client.post("/t/optional", {}, format="json", **bearer(program.raw_api_key))
        assert response.json() == {"success": True, "server_mode": True}

    def test_only_an_unknown_token_is_refused(self, api_client):
        response = api_client.post("/t/optional", {}, format="json", **bearer("aff_unknown"))
        assert response.status_code == 401
        assert response.json() == platform_401(messages.INVALID_API_TOKEN, code=None)


class TestIgnoredKey:
    def test_an_unknown_key_never_refuses(self, api_client):
        response = api_client.post("/t/ignored", {}, format="json", **bearer("aff_unknown"))
        assert response.json() == {"success": True, "keyed": False}

    def test_a_retired_key_is_ignored(self, api_client, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(seconds=1))
        response = api_client.post("/t/ignored", {}, format="json", **bearer(program.raw_api_key))
        assert response.json() == {"success": True, "keyed": False}


class TestTypedReadinessStyle:
    @pytest.mark.parametrize(
        ("header", "message"),
        [
            (None, "Missing or malformed Authorization header. Expected: Bearer <token>."),
            ("Bearer ", "Missing API token."),
            ("Bearer aff_nope", "Invalid API token."),
        ],
    )
    def test_it_answers_invalid_key_in_the_typed_envelope(self, api_client, header, message):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        response = api_client.get("/t/typed", **extra)
        assert response.status_code == 401
        assert response.json() == {"error": {"code": "invalid_key", "message": message}}


class TestRotation:
    def mark(self, program, **delta):
        key = ProgramKey.objects.get(program=program, mode="live")
        return program_key_mark_rotation(key=key, deadline=timezone.now() + timedelta(**delta))

    def test_before_the_deadline_it_warns_with_headers_and_body(self, api_client, program):
        key = self.mark(program, days=7)
        response = api_client.post("/t/required", {}, format="json", **bearer(program.raw_api_key))
        assert response.status_code == 200
        assert response["Deprecation"] == f"@{int(key.rotation_marked_at.timestamp())}"
        assert response["Sunset"].endswith(" GMT")
        assert (
            response["Link"] == '<https://track.example.test/docs/errors#api_key_rotation_required>; rel="deprecation"'
        )
        body = response.json()
        assert body["success"] is True
        [warning] = body["warnings"]
        assert warning["code"] == "api_key_rotation_required"
        assert warning["rotate_by"] == key.rotation_deadline.isoformat()
        assert set(warning) == {"code", "message", "hint", "rotate_by", "docs_url"}

    def test_at_the_deadline_it_refuses_with_the_typed_envelope(self, api_client, program):
        self.mark(program, seconds=-1)
        response = api_client.post("/t/required", {}, format="json", **bearer(program.raw_api_key))
        assert response.status_code == 401
        body = response.json()
        assert "data" not in body and "warnings" not in body
        assert body["error"]["code"] == "api_key_rotation_required"
        assert set(body["error"]) == {"code", "message", "hint", "docs_url"}
        for header in ("Deprecation", "Sunset", "Link"):
            assert response.has_header(header)

    def test_a_retired_key_is_refused_on_the_optional_route_too(self, api_client, program):
        self.mark(program, seconds=-1)
        response = api_client.post("/t/optional", {}, format="json", **bearer(program.raw_api_key))
        assert response.json()["error"]["code"] == "api_key_rotation_required"

    def test_regenerating_clears_the_flag_and_the_old_key_stops(self, api_client, program):
        self.mark(program, days=7)
        new_key = program_key_regenerate(program=program)
        old = api_client.post("/t/required", {}, format="json", **bearer(program.raw_api_key))
        assert old.status_code == 401
        new = api_client.post("/t/required", {}, format="json", **bearer(new_key))
        assert new.status_code == 200
        assert "warnings" not in new.json()
        assert not new.has_header("Deprecation")
