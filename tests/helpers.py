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
