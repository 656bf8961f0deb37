"""Small views over the project's base classes, so the shared machinery is tested on its own."""

from django.urls import path
from rest_framework.response import Response

from core.api import ratelimit
from core.api.base import BaseApi
from core.errors import BadRequestError, UnauthorizedError
from programs.api import auth
from programs.api.base import ProgramKeyApi

CALLS: list[str] = []


class RequiredKeyApi(ProgramKeyApi):
    rate_scope = ratelimit.TRACK_MONEY
    default_error_codes = {400: "invalid_request", 401: "unauthorized", 500: "internal_error"}

    def post(self, request):
        CALLS.append("required")
        return Response({"success": True, "program_id": self.program_key.program_id, "test": self.program_key.is_test})


class RefundLikeApi(RequiredKeyApi):
    empty_token_message = "Invalid API token"


class OptionalKeyApi(ProgramKeyApi):
    program_key_mode = auth.OPTIONAL
    rate_scope = ratelimit.TRACK_LEAD

    def post(self, request):
        CALLS.append("optional")
        return Response({"success": True, "server_mode": self.program_key is not None})


class IgnoredKeyApi(ProgramKeyApi):
    program_key_mode = auth.IGNORED
    rate_scope = ratelimit.TRACK_CLICK

    def post(self, request):
        CALLS.append("ignored")
        return Response({"success": True, "keyed": self.program_key is not None})


class TypedKeyApi(ProgramKeyApi):
    envelope = "typed"
    rate_scope = ratelimit.READINESS
    failure_message = "Failed to compute readiness. Retry shortly."

    def authentication_failed(self, message: str):
        return UnauthorizedError(message + ".", code="invalid_key")

    def get(self, request):
        if request.query_params.get("boom"):
            raise RuntimeError("secret internals: password=hunter2")
        return Response({"ready": True})


class BoomApi(BaseApi):
    failure_message = "Sale tracking failed"
    default_error_codes = {500: "internal_error"}

    def post(self, request):
        if request.data.get("bad"):
            raise BadRequestError("amount_cents is required and must be a positive integer", code="invalid_request")
        raise RuntimeError("database password=hunter2")


class CliLikeApi(BaseApi):
    failure_message = "Failed to list programs"
    request_id_in_errors = True
    rate_scope = ratelimit.CLI

    def get(self, request):
        raise RuntimeError("boom")


class CliStatusLikeApi(ProgramKeyApi):
    rate_scope = ratelimit.CLI

    def should_send_request_id(self, response) -> bool:
        return response.status_code >= 500

    def get(self, request):
        if request.query_params.get("boom"):
            raise RuntimeError("boom")
        return Response({"ok": True})


urlpatterns = [
    path("t/required", RequiredKeyApi.as_view()),
    path("t/refund-like", RefundLikeApi.as_view()),
    path("t/optional", OptionalKeyApi.as_view()),
    path("t/ignored", IgnoredKeyApi.as_view()),
    path("t/typed", TypedKeyApi.as_view()),
    path("t/boom", BoomApi.as_view()),
    path("t/cli", CliLikeApi.as_view()),
    path("t/cli-status", CliStatusLikeApi.as_view()),
]
