"""One DRF exception handler: every API error leaves in the envelope its view declares."""

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core import errors, messages
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
    if isinstance(exc, drf.ParseError):
        return errors.BadRequestError(messages.MALFORMED_JSON)
    if isinstance(exc, drf.UnsupportedMediaType):
        return errors.BadRequestError("Content-Type must be application/json")
    if isinstance(exc, drf.ValidationError):
        return errors.BadRequestError(_first_message(exc.detail))
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return errors.UnauthorizedError(str(exc.detail) or messages.AUTHENTICATION_REQUIRED)
    if isinstance(exc, drf.PermissionDenied | DjangoPermissionDenied):
        return errors.ForbiddenError(str(getattr(exc, "detail", "")) or messages.PERMISSION_DENIED)
    if isinstance(exc, drf.NotFound | Http404):
        return errors.NotFoundError(messages.NOT_FOUND)
    if isinstance(exc, drf.MethodNotAllowed):
        return errors.MethodNotAllowedError(str(exc.detail))
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
    envelope = getattr(error, "envelope", None) or getattr(view, "envelope", PLATFORM)
    headers = dict(error.headers)
    if error.status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return Response(render_error(error, envelope), status=error.status, headers=headers)
