import logging

import pytest

from core.api.envelopes import platform_error, typed_error
from core.errors import ConflictError, GoneError

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.urls")]


def test_platform_envelope_shape():
    error = ConflictError("Duplicate", code="duplicate_transaction", details={"sale_id": 7})
    assert platform_error(error) == {
        "data": None,
        "error": {
            "status": 409,
            "name": "ConflictError",
            "message": "Duplicate",
            "details": {"sale_id": 7},
            "code": "duplicate_transaction",
        },
    }


def test_platform_envelope_leaves_out_a_missing_code():
    assert "code" not in platform_error(GoneError("gone"))["error"]


def test_typed_envelope_has_no_data_key_and_always_a_code():
    body = typed_error(GoneError("Link off", code="link_disabled", hint="turn it on"))
    assert body == {"error": {"code": "link_disabled", "message": "Link off", "hint": "turn it on"}}
    assert typed_error(GoneError("x"))["error"]["code"] == "gone"


def test_an_unknown_error_is_a_500_with_the_views_message_and_no_internals(api_client, caplog):
    with caplog.at_level(logging.ERROR, logger="svc.api"):
        response = api_client.post("/t/boom", {}, format="json")
    assert response.status_code == 500
    assert response.json() == {
        "data": None,
        "error": {
            "status": 500,
            "name": "InternalServerError",
            "message": "Sale tracking failed",
            "details": {},
            "code": "internal_error",
        },
    }
    assert "hunter2" not in response.content.decode()
    assert any(record.message == "api.unhandled_error" for record in caplog.records)


def test_a_raised_api_error_renders_in_the_views_envelope(api_client):
    response = api_client.post("/t/boom", {"bad": True}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "status": 400,
        "name": "BadRequestError",
        "message": "amount_cents is required and must be a positive integer",
        "details": {},
        "code": "invalid_request",
    }


def test_malformed_json_is_a_clear_400(api_client):
    response = api_client.post("/t/boom", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Request body must be valid JSON"


def test_typed_view_500_uses_its_failure_message(api_client, settings):
    from tests.factories import ProgramFactory

    program = ProgramFactory()
    response = api_client.get("/t/typed?boom=1", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "internal_error", "message": "Failed to compute readiness. Retry shortly."}
    }
    assert response.has_header("X-Request-ID")


def test_wrong_method_is_a_405_in_the_envelope(api_client):
    response = api_client.get("/t/boom")
    assert response.status_code == 405
    assert response.json()["error"]["name"] == "MethodNotAllowedError"


def test_the_errors_the_spec_always_answers_typed_carry_their_envelope_whatever_the_route():
    from core.api.envelopes import PLATFORM, render_error
    from core.errors import RateLimitedError, TypedGoneError, TypedUnauthorizedError

    gone = TypedGoneError("Link off", code="link_disabled", hint="Turn it on", top_level={"success": False})
    assert render_error(gone, gone.envelope or PLATFORM) == {
        "error": {"code": "link_disabled", "message": "Link off", "hint": "Turn it on"},
        "success": False,
    }
    retired = TypedUnauthorizedError("Rotate", code="api_key_rotation_required")
    assert (retired.envelope, RateLimitedError.envelope, GoneError.envelope, ConflictError.envelope) == (
        "typed",
        "typed",
        None,
        None,
    )


def test_no_code_sets_an_envelope_or_top_level_keys_on_an_error_after_the_fact():
    # The error's class says how it renders; an attribute set on one instance is invisible to readers and types.
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assignment = re.compile(r"\.(envelope|top_level)\s*=")
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for app in ("core", "programs", "tracking", "commissions", "cli_api", "dashboard")
        for path in (root / app).rglob("*.py")
        if "migrations" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if assignment.search(line) and not line.lstrip().startswith("self.")
    ]
    assert offenders == []
