"""The spec's two error envelopes, built in one place.

platform: {"data": null, "error": {"status", "name", "message", "details", "code"?}}
typed:    {"error": {"code", "message", ...extra}} with no "data" key.
"""

from typing import Any

from core.errors import ApiError

PLATFORM = "platform"
TYPED = "typed"

# Codes of the refusals that come before a route's own checks (method, size limits). Routes whose errors always
# carry a code (sale, refund, the typed envelope) use these; the spec names none of the four statuses.
PROTOCOL_ERROR_CODES = {
    405: "method_not_allowed",
    413: "payload_too_large",
    414: "uri_too_long",
    431: "headers_too_large",
}
# Typed envelopes always carry a code; these fill in when the error did not name one.
TYPED_DEFAULT_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    410: "gone",
    422: "unprocessable_entity",
    429: "rate_limited",
    500: "internal_error",
    **PROTOCOL_ERROR_CODES,
}


def platform_error(error: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "status": error.status,
        "name": error.name,
        "message": error.message,
        "details": dict(error.details),
    }
    if error.code:
        body["code"] = error.code
    return {"data": None, "error": body}


def typed_error(error: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "code": error.code or TYPED_DEFAULT_CODES.get(error.status, "error"),
        "message": error.message,
    }
    body.update(error.extra)
    return {"error": body}


def render_error(error: ApiError, envelope: str) -> dict[str, Any]:
    body = typed_error(error) if envelope == TYPED else platform_error(error)
    # Click's 410 keeps top-level success/message beside the typed error object.
    body.update(error.top_level or {})
    return body
