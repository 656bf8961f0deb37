"""The one application exception. Services raise these; the API handler renders them."""

from typing import Any


class ApiError(Exception):
    status = 500
    name = "InternalServerError"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = details or {}
        self.headers = headers or {}
        # Typed-envelope siblings of code and message (hint, docs_url, retry_after_seconds).
        self.extra = extra


class BadRequestError(ApiError):
    status = 400
    name = "BadRequestError"


class UnauthorizedError(ApiError):
    status = 401
    name = "UnauthorizedError"


class ForbiddenError(ApiError):
    status = 403
    name = "ForbiddenError"


class NotFoundError(ApiError):
    status = 404
    name = "NotFoundError"


class MethodNotAllowedError(ApiError):
    status = 405
    name = "MethodNotAllowedError"


class ConflictError(ApiError):
    status = 409
    name = "ConflictError"


class GoneError(ApiError):
    status = 410
    name = "GoneError"


class PayloadTooLargeError(ApiError):
    status = 413
    name = "PayloadTooLargeError"


class UriTooLongError(ApiError):
    status = 414
    name = "URITooLongError"


class UnprocessableEntityError(ApiError):
    status = 422
    name = "UnprocessableEntityError"


class RateLimitedError(ApiError):
    status = 429
    name = "TooManyRequestsError"

    @classmethod
    def retry_after(cls, message: str, *, seconds: int, headers: dict[str, str] | None = None) -> "RateLimitedError":
        """The typed 429 every limit answers: code rate_limited, status and retry_after_seconds in the body,
        Retry-After (then any extra headers) on the response."""
        error = cls(
            message,
            code="rate_limited",
            headers={"Retry-After": str(seconds), **(headers or {})},
            status=429,
            retry_after_seconds=seconds,
        )
        error.envelope = "typed"  # type: ignore[attr-defined]
        return error


class HeadersTooLargeError(ApiError):
    status = 431
    name = "RequestHeaderFieldsTooLargeError"


class InternalServerError(ApiError):
    status = 500
    name = "InternalServerError"
