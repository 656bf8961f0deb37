"""One DRF exception handler: every API error leaves in the envelope its view declares."""

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core import errors, messages
from core.api import ratelimit
from core.api.envelopes import PLATFORM, render_error

logger = logging.getLogger("svc.api")


def _first_message(detail: Any) -> str:
    """The first human message inside a DRF ValidationError detail (dict, list or string)."""
    if isinstance(detail, dict):
        for value in detail.values():
            return _first_message(value)
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def to_api_error(exc: Exception, view: Any) -> errors.ApiError:
    if isinstance(exc, errors.ApiError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return payload_too_large()
    if isinstance(exc, drf.ParseError):
        return errors.BadRequestError(messages.MALFORMED_JSON)
    if isinstance(exc, drf.UnsupportedMediaType):
        return errors.BadRequestError(messages.CONTENT_TYPE_NOT_JSON)
    if isinstance(exc, drf.ValidationError):
        return errors.BadRequestError(_first_message(exc.detail))
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return errors.UnauthorizedError(str(exc.detail) or messages.AUTHENTICATION_REQUIRED)
    if isinstance(exc, drf.PermissionDenied | DjangoPermissionDenied):
        return errors.ForbiddenError(str(getattr(exc, "detail", "")) or messages.PERMISSION_DENIED)
    if isinstance(exc, drf.NotFound | Http404):
        return errors.NotFoundError(messages.NOT_FOUND)
    if isinstance(exc, drf.MethodNotAllowed):
        method = getattr(getattr(view, "request", None), "method", "")
        return errors.MethodNotAllowedError(messages.METHOD_NOT_ALLOWED.format(method=method))
    if isinstance(exc, drf.APIException):
        error = errors.ApiError(str(exc.detail))
        error.status = exc.status_code
        return error
    request = getattr(view, "request", None)
    logger.exception(
        "api.unhandled_error",
        extra={"view": type(view).__name__, "path": getattr(request, "path", "")},
    )
    return errors.InternalServerError(getattr(view, "failure_message", messages.INTERNAL_ERROR))


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    view = context.get("view")
    error = to_api_error(exc, view)
    shape = getattr(view, "shape_error", None)
    if shape is not None:
        error = shape(error)
    declared: str = getattr(view, "envelope", PLATFORM)
    envelope = error.envelope or declared
    headers = dict(error.headers)
    if error.status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return Response(render_error(error, envelope), status=error.status, headers=headers)


def payload_too_large() -> errors.PayloadTooLargeError:
    return errors.PayloadTooLargeError(messages.PAYLOAD_TOO_LARGE.format(limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE))


def error_response_for_route(request: HttpRequest, error: errors.ApiError) -> JsonResponse:
    """An error answered before any view runs (by a middleware), in the envelope and with the codes the route
    would have used; the platform envelope for paths that are no API route."""
    try:
        view_class = getattr(resolve(request.path_info).func, "view_class", None)
    except Resolver404:
        view_class = None
    codes = getattr(view_class, "default_error_codes", {})
    if error.code is None and error.status in codes:
        error.code = codes[error.status]
    declared: str = getattr(view_class, "envelope", PLATFORM)
    envelope = error.envelope or declared
    response = JsonResponse(render_error(error, envelope), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    # A rate-limited route's responses all carry the rate-limit headers; a refusal before the route does not count.
    scope = getattr(view_class, "rate_scope", None)
    usage = ratelimit.rate_limit_peek(scope, request) if scope is not None else None
    for name, value in (usage.headers() if usage else {}).items():
        response[name] = value
    return response
