"""Project base views. Each API view declares its policy as class attributes:

class SaleTrackApi(ProgramKeyApi):  # programs.api.base.ProgramKeyApi adds program-key authentication
    envelope = "platform"
    default_error_codes = SALE_ERROR_CODES
    failure_message = messages.SALE_TRACKING_FAILED
    rate_scope = ratelimit.TRACK_MONEY

Every call goes through the same steps: the rate limit (ratelimit.rate_limit_check), the route, the one exception
handler (core.api.handler.api_exception_handler), JSON rendering, then answer_headers_set; the request-log row is
programs.api.base.call_logged. BaseApi runs them inside DRF's dispatch. The click and sale routes' fast path
(tracking/api/lean.py) runs the same steps through these same functions, without DRF (plain_json_answer): a change
to a step made here holds for both, and tests/tracking/test_lean_routes.py compares the two answers.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import messages
from core.api import ratelimit
from core.api.envelopes import PLATFORM
from core.api.handler import api_exception_handler
from core.errors import ApiError
from core.middleware import request_id_of

ExtraT = TypeVar("ExtraT")


class BaseApi(APIView):
    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes: list[type[BasePermission]] = []
    envelope: str = PLATFORM
    failure_message: str = messages.INTERNAL_ERROR
    # Status -> error.code, for routes whose errors always carry one (sale, refund).
    default_error_codes: dict[int, str] = {}
    rate_scope: ratelimit.RateScope | None = None
    sends_request_id: bool = True
    # CLI 500s repeat the request id in the message and details.
    request_id_in_errors: bool = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # A method the route does not offer is the first thing wrong with the request, whoever sends it: 405, not
        # the 401 of a missing key, and not counted against the route's rate limit.
        self.rate_usage = None
        request_method = request.method or ""  # set on every request the server received
        method = request_method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            if self.rate_scope is not None:
                self.rate_usage = ratelimit.rate_limit_peek(self.rate_scope, request._request)
            raise MethodNotAllowed(request_method)
        # Rate limits come next: a refused request must not parse, authenticate or record anything.
        if self.rate_scope is not None:
            self.rate_usage = ratelimit.rate_limit_check(self.rate_scope, request._request)
        super().initial(request, *args, **kwargs)

    def shape_error(self, error: ApiError) -> ApiError:
        if error.code is None and error.status in self.default_error_codes:
            error.code = self.default_error_codes[error.status]
        if self.request_id_in_errors and error.status >= 500:
            request_id = getattr(self.request, "request_id", "")
            error.message = f"{error.message} (request_id: {request_id})"
            error.details = {**error.details, "request_id": request_id}
        return error

    def should_send_request_id(self, response: Response) -> bool:
        return self.sends_request_id

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        request_id = request_id_of(request._request) if self.should_send_request_id(response) else None
        answer_headers_set(response, usage=getattr(self, "rate_usage", None), request_id=request_id)
        return response


def answer_headers_set(
    response: HttpResponseBase, *, usage: ratelimit.RateUsage | None, request_id: str | None
) -> None:
    """The headers every answer ends with: the rate limit's usage (a 429 keeps the ones it was raised with) and
    X-Request-ID (None: a route that sends none)."""
    if usage is not None:
        for name, value in usage.headers().items():
            response.headers.setdefault(name, value)
    if request_id is not None:
        response["X-Request-ID"] = request_id


_JSON = JSONRenderer()
_ALLOWED: dict[type[BaseApi], str] = {}


def plain_json_answer(
    request: HttpRequest, view_class: type[BaseApi], call: Callable[[], tuple[Response, ExtraT]]
) -> tuple[Response, ExtraT | None]:
    """The answer `view_class` gives a call its fast path has checked is plain (a method the route offers, JSON
    asked for as DRF's negotiation would pick it): the route's rate limit, `call` (the route's post()), the
    exception handler, JSON rendering and the headers, as BaseApi's dispatch and Django's handler would give them.
    Returns the rendered answer and what `call` returned beside it (None when it raised)."""
    usage = None
    extra: ExtraT | None = None
    try:
        if view_class.rate_scope is not None:
            usage = ratelimit.rate_limit_check(view_class.rate_scope, request)
        response, extra = call()
    except Exception as exc:  # noqa: BLE001 - the API's one exception handler decides, as DRF's dispatch lets it
        view = view_class()
        view.request = request  # type: ignore[assignment]  # the handler reads the path, for its log line
        response = api_exception_handler(exc, {"view": view})
    response.accepted_renderer = _JSON
    response.accepted_media_type = _JSON.media_type
    response.renderer_context = {}  # type: ignore[attr-defined]  # set by DRF before render()
    response.render()
    if view_class not in _ALLOWED:
        _ALLOWED[view_class] = ", ".join(view_class().allowed_methods)
    response["Allow"] = _ALLOWED[view_class]  # APIView.finalize_response's one default header
    answer_headers_set(response, usage=usage, request_id=request_id_of(request))
    return response, extra
