"""Every CLI route: 60 requests per minute per Bearer credential (program key or login token), IP when none is
sent; the 61st is refused in the typed envelope before the route does anything."""

import pytest

from cli_api.models import CliLoginSession

from .conftest import CALLBACK, INIT, LOGOUT, POLL, PROGRAMS, START, STATUS, TEST_EVENT

pytestmark = pytest.mark.django_db

ROUTES = [
    ("post", START),
    ("post", CALLBACK),
    ("get", POLL),
    ("post", LOGOUT),
    ("post", INIT),
    ("get", PROGRAMS),
    ("get", STATUS),
    ("post", TEST_EVENT),
]


def send(api_client, method: str, path: str, token: str | None = None, ip: str = "10.0.0.1"):
    headers = {"REMOTE_ADDR": ip}
    if token:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return getattr(api_client, method)(path, **headers)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_the_61st_request_with_one_credential_is_refused(api_client, method, path):
    for _ in range(60):
        response = send(api_client, method, path, token="credential-a")
        assert response.status_code != 429
    refused = send(api_client, method, path, token="credential-a")

    assert refused.status_code == 429
    body = refused.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == "rate_limited" and body["error"]["status"] == 429
    assert 0 < body["error"]["retry_after_seconds"] <= 60
    assert refused["Retry-After"] == str(body["error"]["retry_after_seconds"])
    assert (refused["X-RateLimit-Limit"], refused["X-RateLimit-Remaining"]) == ("60", "0")
    # Every CLI answer names its request, except GET /status below a 500.
    assert refused.has_header("X-Request-ID") is (path != STATUS)
    # Another credential from the same address has a bucket of its own, and so has the address itself.
    assert send(api_client, method, path, token="credential-b").status_code != 429
    assert send(api_client, method, path).status_code != 429


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_without_a_credential_the_bucket_is_the_ip(api_client, method, path):
    for _ in range(60):
        assert send(api_client, method, path).status_code != 429
    assert send(api_client, method, path).status_code == 429
    assert send(api_client, method, path, ip="10.0.0.2").status_code != 429


def test_a_refused_start_opens_no_session(api_client):
    for _ in range(60):
        send(api_client, "post", START)
    count = CliLoginSession.objects.count()
    assert send(api_client, "post", START).status_code == 429
    assert CliLoginSession.objects.count() == count == 60


def test_one_bucket_is_shared_by_every_cli_route(api_client):
    for index in range(60):
        method, path = ROUTES[index % len(ROUTES)]
        assert send(api_client, method, path, token="shared").status_code != 429
    assert send(api_client, "get", STATUS, token="shared").status_code == 429
