import re

import pytest

from tests.factories import ProgramFactory

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.urls")]


def test_tracking_style_routes_send_a_request_id(api_client):
    response = api_client.post("/t/ignored", {}, format="json")
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])


def test_a_callers_request_id_is_kept_when_safe(api_client):
    response = api_client.post("/t/ignored", {}, format="json", HTTP_X_REQUEST_ID="abc-12345678")
    assert response["X-Request-ID"] == "abc-12345678"


def test_an_unsafe_request_id_is_replaced(api_client):
    response = api_client.post("/t/ignored", {}, format="json", HTTP_X_REQUEST_ID="<script>alert(1)</script>")
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])


def test_errors_send_it_too(api_client):
    assert api_client.post("/t/required", {}, format="json").has_header("X-Request-ID")


def test_cli_status_style_sends_none_on_200_401_and_429(api_client):
    program = ProgramFactory()
    ok = api_client.get("/t/cli-status", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
    assert ok.status_code == 200 and not ok.has_header("X-Request-ID")
    refused = api_client.get("/t/cli-status")
    assert refused.status_code == 401 and not refused.has_header("X-Request-ID")
    for _ in range(60):
        api_client.get("/t/cli-status")
    limited = api_client.get("/t/cli-status")
    assert limited.status_code == 429 and not limited.has_header("X-Request-ID")
    boom = api_client.get("/t/cli-status?boom=1", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
    assert boom.status_code == 500 and boom.has_header("X-Request-ID")


def test_cli_500s_carry_the_request_id_in_message_and_details(api_client):
    response = api_client.get("/t/cli", HTTP_X_REQUEST_ID="req-abcdef12")
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["message"] == "Failed to list programs (request_id: req-abcdef12)"
    assert error["details"] == {"request_id": "req-abcdef12"}
    assert response["X-Request-ID"] == "req-abcdef12"
