"""Project base views. Each API view declares its policy as class attributes:

class SaleTrackApi(ProgramKeyApi):  # programs.api.base.ProgramKeyApi adds program-key authentication
    envelope = "platform"
    default_error_codes = SALE_ERROR_CODES
    failure_message = messages.SALE_TRACKING_FAILED
    rate_scope = ratelimit.TRACK_MONEY
"""

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import messages
from core.api import ratelimit
from core.api.envelopes import PLATFORM
from core.errors import ApiError


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
        usage = getattr(self, "rate_usage", None)
        if usage is not None:
            for name, value in usage.headers().items():
                response.headers.setdefault(name, value)
        if self.should_send_request_id(response):
            # RequestIdMiddleware sets request_id, which HttpRequest does not declare.
            django_request: Any = request._request
            response["X-Request-ID"] = getattr(request, "request_id", "") or django_request.request_id
        return response
