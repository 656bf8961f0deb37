import re
from datetime import timedelta
from unittest import mock
from urllib.parse import parse_qs, urlsplit

import pytest

from cli_api.models import CliLoginSession
from programs.keys import key_digest
from tests.helpers import platform_error

from .conftest import START

pytestmark = pytest.mark.django_db


def test_it_opens_a_five_minute_session_and_answers_the_state_and_login_url(api_client):
    response = api_client.post(START)

    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == {"state", "login_url", "user_code", "expires_at", "expires_in", "interval"}
    assert len(data["state"]) >= 40
    assert data["login_url"] == f"https://track.example.test/cli/login?state={data['state']}"
    assert re.fullmatch(r"[A-Z2-7]{4}-[A-Z2-7]{4}", data["user_code"])
    assert (data["expires_in"], data["interval"]) == (300, 2)
    session = CliLoginSession.objects.get()
    assert session.expires_at - session.created_at == timedelta(minutes=5)
    assert data["expires_at"] == session.expires_at.isoformat()
    assert session.user is None and session.authenticated_at is None
    assert response["Cache-Control"] == "no-store"
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
    assert response["X-RateLimit-Limit"] == "60"


def test_the_state_is_random_and_stored_only_as_its_digest(api_client):
    first = api_client.post(START).json()["data"]["state"]
    second = api_client.post(START).json()["data"]["state"]

    assert first != second
    digests = set(CliLoginSession.objects.values_list("state_digest", flat=True))
    assert digests == {key_digest(first), key_digest(second)}


def test_the_login_url_falls_back_to_the_request_host(api_client, settings):
    settings.PUBLIC_BASE_URL = ""
    data = api_client.post(START).json()["data"]
    parts = urlsplit(data["login_url"])
    assert (parts.scheme, parts.netloc, parts.path) == ("http", "testserver", "/cli/login")
    assert parse_qs(parts.query) == {"state": [data["state"]]}


def test_a_failure_is_a_500_with_the_request_id_in_message_and_details(api_client):
    with mock.patch("cli_api.api.views.login_session_start", side_effect=RuntimeError("db down")):
        response = api_client.post(START, HTTP_X_REQUEST_ID="req-start-0001")

    assert response.status_code == 500
    assert response.json() == platform_error(
        500,
        "InternalServerError",
        "Failed to start auth session (request_id: req-start-0001)",
        details={"request_id": "req-start-0001"},
    )
    assert response["X-Request-ID"] == "req-start-0001"
    assert not CliLoginSession.objects.exists()
