import time

import pytest

from tests.core.urls import CALLS
from tests.factories import ProgramFactory
from tests.helpers import assert_rate_limited

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.urls")]


def test_every_response_carries_the_rate_limit_headers(api_client):
    response = api_client.post("/t/ignored", {}, format="json")
    assert response["X-RateLimit-Limit"] == "60"
    assert response["X-RateLimit-Remaining"] == "59"
    reset = int(response["X-RateLimit-Reset"])
    assert int(time.time()) <= reset <= time.time() + 61


def test_error_responses_carry_them_too(api_client):
    response = api_client.post("/t/required", {}, format="json")
    assert response.status_code == 401
    assert response["X-RateLimit-Limit"] == "120"


def test_the_limit_answers_429_in_the_typed_envelope_before_the_view_runs(api_client):
    for _ in range(30):
        assert api_client.post("/t/optional", {}, format="json").status_code == 200
    CALLS.clear()
    response = api_client.post("/t/optional", {}, format="json")
    assert_rate_limited(response)
    assert CALLS == []


def test_keyed_routes_count_per_key_and_fall_back_to_ip(api_client):
    first, second = ProgramFactory(), ProgramFactory()
    for _ in range(120):
        api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {first.raw_api_key}")
    limited = api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {first.raw_api_key}")
    assert limited.status_code == 429
    other = api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {second.raw_api_key}")
    assert other.status_code == 200
    keyless = api_client.post("/t/required", {}, format="json")
    assert keyless.status_code == 401  # its own IP bucket, not the first key's


def test_ip_routes_count_per_client_ip(api_client):
    for _ in range(30):
        api_client.post("/t/optional", {}, format="json", REMOTE_ADDR="10.0.0.1")
    assert api_client.post("/t/optional", {}, format="json", REMOTE_ADDR="10.0.0.1").status_code == 429
    assert api_client.post("/t/optional", {}, format="json", REMOTE_ADDR="10.0.0.2").status_code == 200


def test_forwarded_for_is_ignored_without_trusted_proxies(api_client):
    for n in range(30):
        api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
    assert api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429


def test_forwarded_for_counts_behind_a_trusted_proxy(api_client, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    for _ in range(30):
        api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="spoofed, 203.0.113.7")
    limited = api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert limited.status_code == 429
    other = api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert other.status_code == 200


def test_the_scale_setting_multiplies_every_limit(api_client, settings):
    settings.RATELIMIT_SCALE = 10
    response = api_client.post("/t/optional", {}, format="json")
    assert response["X-RateLimit-Limit"] == "300"
