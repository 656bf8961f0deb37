"""The base view of every agent route (/api/agent/v1/): agent-key authentication, the scope each method needs,
one rate limit per key (120 calls a minute, X-RateLimit-* headers, the typed 429), and errors in the platform
envelope with a stable error.code; the one reader of query parameters and the one reader of JSON bodies."""

import re
from collections.abc import Callable
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ratelimit
from core.api.base import BaseApi
from core.api.envelopes import PROTOCOL_ERROR_CODES
from core.api.query import QueryIntegerField
from core.errors import ApiError, BadRequestError
from core.ids import MAX_BIGINT
from programs.models import AgentKey

from .. import messages
from ..auth import AgentKeyAuthentication
from ..permissions import HasAgentScope
from ..services import AgentWrite, ResponseSeal, agent_write_run, request_digest

DEFAULT_CODES = {
    **PROTOCOL_ERROR_CODES,
    400: messages.CODE_BAD_REQUEST,
    409: messages.CODE_IDEMPOTENCY_CONFLICT,
    401: messages.CODE_KEY_INVALID,
    404: messages.CODE_NOT_FOUND,
    500: messages.CODE_INTERNAL,
}


class AgentApi(BaseApi):
    authentication_classes = [AgentKeyAuthentication]
    permission_classes = [HasAgentScope]
    metadata_class = None  # no OPTIONS description: it would answer without the key
    rate_scope = ratelimit.AGENT
    failure_message = messages.AGENT_FAILED
    default_error_codes = DEFAULT_CODES
    blank_query_means_absent = True
    # Method -> the scope it needs ("programs:read").
    required_scopes: dict[str, str] = {}

    @property
    def agent_key(self) -> AgentKey:
        key = self.request.auth
        assert isinstance(key, AgentKey)  # AgentKeyAuthentication refuses every call without one
        return key

    def shape_error(self, error: ApiError) -> ApiError:
        error = super().shape_error(error)
        if error.code is None:
            error.code = f"http_{error.status}"
        return error

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response


def query_of(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The validated query parameters (400 invalid_request naming the first bad one)."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def id_filter(invalid: str, help_text: str) -> QueryIntegerField:
    """An optional query parameter naming an object by id (program_id, partner_id): 400 `invalid` unless a whole
    number from 1 to the largest id."""
    return QueryIntegerField(
        min_value=1, max_value=MAX_BIGINT, invalid=invalid, too_big=invalid, required=False, help_text=help_text
    )


def body_of(
    serializer_class: type[serializers.Serializer], request: Request, *, object_required: bool = True
) -> dict[str, Any]:
    """The validated JSON body (400 invalid_request naming the first bad field). A body that is not a JSON object
    is refused (400 BODY_NOT_OBJECT), or, with `object_required` False, read as an empty object, so the answer
    names the first field it lacks."""
    data = request.data
    if not isinstance(data, dict):
        if object_required:
            raise BadRequestError(messages.BODY_NOT_OBJECT, code=messages.CODE_BAD_REQUEST)
        data = {}
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


class AgentWriteApi(AgentApi):
    """A route that changes something. `write()` runs the domain service with its audit entry in one transaction
    and honours the Idempotency-Key header (agent_api.services.agent_write_run); a replayed response carries
    `Idempotent-Replayed: true`."""

    def write(self, request: Request, perform: Callable[[], AgentWrite], seal: ResponseSeal | None = None) -> Response:
        idempotency_key = request.headers.get("Idempotency-Key")
        if idempotency_key is not None and not _IDEMPOTENCY_KEY.fullmatch(idempotency_key):
            raise BadRequestError(messages.IDEMPOTENCY_KEY_INVALID, code=messages.CODE_BAD_REQUEST)
        outcome = agent_write_run(
            key=self.agent_key,
            perform=perform,
            digest=request_digest(method=request.method or "", path=request.path, body=request.data),
            idempotency_key=idempotency_key or "",
            request_id=getattr(request._request, "request_id", ""),
            seal=seal,
        )
        response = Response(outcome.body, status=outcome.status)
        if outcome.replayed:
            response["Idempotent-Replayed"] = "true"
        return response
