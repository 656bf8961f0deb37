"""The one application exception. Services raise these; the API handler renders them."""

from typing import Any


class ApiError(Exception):
    status = 500
    name = "InternalServerError"
    # None: the envelope the route declares. "typed" for the errors the spec always answers typed (rate limits,
    # retired keys, a disabled link), whatever the route.
    envelope: str | None = None
    # Keys set beside "error" in the body (click's 410 keeps success and message there).
    top_level: dict[str, Any] | None = None

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


class TypedUnauthorizedError(UnauthorizedError):
    """A 401 the spec answers in the typed envelope on every route (a key past its rotation deadline)."""

    envelope = "typed"


class TypedGoneError(GoneError):
    """A 410 in the typed envelope that also keeps top-level keys (click's disabled link)."""

    envelope = "typed"

    def __init__(self, message: str, *, top_level: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.top_level = top_level


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
    envelope = "typed"

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
        return error


class HeadersTooLargeError(ApiError):
    status = 431
    name = "RequestHeaderFieldsTooLargeError"


class InternalServerError(ApiError):
    status = 500
    name = "InternalServerError"
