import io
import re
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream, WSGIRequest
from django.http import HttpRequest, HttpResponse

from . import errors, limits, messages
from .api.handler import error_response_for_route, payload_too_large
from .logging import current_request_id
from .text import storable_text

# A caller may pass its own id to correlate logs; anything odd is replaced rather than echoed.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


class RequestIdMiddleware:
    """Gives every request an id for logs. Which responses show it is the API views' decision."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if _SAFE_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        # HttpRequest declares no request id: this middleware is what adds it.
        request.request_id = request_id  # type: ignore[attr-defined]
        token = current_request_id.set(request_id)
        try:
            return self.get_response(request)
        finally:
            current_request_id.reset(token)


def request_id_of(request: HttpRequest) -> str:
    """The id RequestIdMiddleware gave the request (HttpRequest declares no such attribute)."""
    request_id: str = request.request_id  # type: ignore[attr-defined]
    return request_id


def body_limit(path: str) -> int:
    """The largest body a request to `path` may send: DATA_UPLOAD_MAX_MEMORY_SIZE, or a LARGE_BODY_PATHS limit."""
    for pattern, limit in settings.LARGE_BODY_PATHS:
        if re.fullmatch(pattern, path):
            return int(limit)
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


class RequestLimitsMiddleware:
    """Refuses, before anything reads the request, what would otherwise fail later with a 500 or an HTML page:
    a URL or headers over the limits of core/limits.py (414, 431), a body over DATA_UPLOAD_MAX_MEMORY_SIZE (413,
    by Content-Length or, for a chunked body, by reading at most one byte past the limit), and NUL in a query
    parameter or a header (400: PostgreSQL stores no NUL, and a NUL session cookie reaches a session lookup).
    Each answer is JSON in the route's envelope, with the route's error codes."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: WSGIRequest) -> HttpResponse:
        error = self.refusal(request)
        if error is None:
            return self.get_response(request)
        response = error_response_for_route(request, error)
        response["X-Request-ID"] = getattr(request, "request_id", "")
        # The middleware that would add it runs after this one.
        response["Content-Length"] = str(len(response.content))
        return response

    def refusal(self, request: WSGIRequest) -> errors.ApiError | None:
        meta = request.META
        if len(request.get_full_path()) > limits.MAX_URL_BYTES:
            return errors.UriTooLongError(messages.URI_TOO_LONG.format(limit=limits.MAX_URL_BYTES))
        headers = [(name, value) for name, value in meta.items() if name.startswith(_HEADER_KEYS)]
        if (
            len(headers) > limits.MAX_HEADER_FIELDS
            or any(len(name) + len(str(value)) > limits.MAX_HEADER_FIELD_BYTES for name, value in headers)
            or sum(len(name) + len(str(value)) for name, value in headers) > limits.MAX_HEADER_BYTES
        ):
            return errors.HeadersTooLargeError(
                messages.HEADERS_TOO_LARGE.format(
                    fields=limits.MAX_HEADER_FIELDS,
                    field_bytes=limits.MAX_HEADER_FIELD_BYTES,
                    total_bytes=limits.MAX_HEADER_BYTES,
                )
            )
        for name, value in headers:
            if not storable_text(str(value)):
                return errors.BadRequestError(messages.HEADER_NOT_STORABLE.format(name=_header_name(name)))
        for name, values in request.GET.lists():
            if not (storable_text(name) and all(storable_text(value) for value in values)):
                return errors.BadRequestError(messages.QUERY_NOT_STORABLE.format(name=name.replace("\x00", "\\u0000")))
        return self.body_refusal(request)

    def body_refusal(self, request: WSGIRequest) -> errors.ApiError | None:
        limit = body_limit(request.path_info)
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared:
            try:
                too_big = int(declared) > limit
            except ValueError:
                too_big = False  # Django and DRF read an unreadable length as no body
            return payload_too_large() if too_big else None
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            # WSGI gives Django no length for a chunked body, so Django would read it as empty. Read it here,
            # at most one byte past the limit, and hand it on with its length like any other body.
            try:
                body = request.environ["wsgi.input"].read(limit + 1)
            except Exception:  # the server's chunk parser (malformed chunk) or the connection: the client's doing
                return errors.BadRequestError(messages.BODY_UNREADABLE)
            if len(body) > limit:
                return payload_too_large()
            # Django's own WSGIRequest keeps a LimitedStream here; the stubs declare the wider BinaryIO.
            request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
            request.META["CONTENT_LENGTH"] = str(len(body))
        return None


# WSGI names of request headers: HTTP_* and the two CGI ones.
_HEADER_KEYS = ("HTTP_", "CONTENT_TYPE", "CONTENT_LENGTH")


def _header_name(meta_key: str) -> str:
    return meta_key.removeprefix("HTTP_").replace("_", "-").title()
