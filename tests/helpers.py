"""Small builders shared by the API tests."""

from typing import Any


def bearer(key: str) -> dict[str, str]:
    """Test-client keyword arguments for `Authorization: Bearer <key>`."""
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def platform_error(status: int, name: str, message: str, code: str | None = None, details: dict | None = None) -> dict:
    """The spec's platform envelope. `code` only where the route adds one (sale and refund always do)."""
    error: dict[str, Any] = {"status": status, "name": name, "message": message, "details": details or {}}
    if code is not None:
        error["code"] = code
    return {"data": None, "error": error}


def bad_request(message: str, code: str | None = None) -> dict:
    """The platform envelope of a 400."""
    return platform_error(400, "BadRequestError", message, code)


def assert_rate_limited(response) -> int:
    """The spec's typed 429: body, Retry-After and an empty bucket. Returns retry_after_seconds."""
    from core import messages

    assert response.status_code == 429
    body = response.json()
    retry = body["error"]["retry_after_seconds"]
    assert body == {
        "error": {
            "code": "rate_limited",
            "message": messages.RATE_LIMITED.format(seconds=retry),
            "status": 429,
            "retry_after_seconds": retry,
        }
    }
    assert 1 <= retry <= 60
    assert response.headers["Retry-After"] == str(retry)
    assert response.headers["X-RateLimit-Remaining"] == "0"
    return retry
