"""The base view of every agent route (/api/agent/v1/): agent-key authentication, the scope each method needs,
one rate limit per key (120 calls a minute, the rate-limit headers, the typed 429), and errors in the platform
envelope with a stable error.code; the one reader of query parameters and the one reader of JSON bodies; the one
list route (query -> selector -> page -> body)."""

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ratelimit
from core.api.base import BaseApi
from core.api.envelopes import PROTOCOL_ERROR_CODES
from core.api.query import QueryIntegerField
from core.errors import ApiError, BadRequestError
from core.ids import MAX_BIGINT
from programs.models import AgentKey, Program

from .. import messages
from ..auth import AgentKeyAuthentication
from ..permissions import HasAgentScope
from ..selectors import agent_program_get
from ..services import AgentWrite, ResponseSeal, agent_write_run, request_digest
from .pagination import PageQuerySerializer, page_of
from .serializers import errors

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


def query_of(serializer_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
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
    serializer_class: type[serializers.Serializer[Any]], request: Request, *, object_required: bool = True
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


class AgentListApi(AgentApi):
    """A list route (GET): its query read with `query_serializer`, the rows from `selector` (called with owner()
    and filters(query)), one page of them newest first (`older_than`: as pagination.page_of), answered with
    `output_serializer`. A list view declares those and overrides only the hooks its answer needs. Combine with
    AgentWriteApi (listed first) for a route that also creates."""

    query_serializer: ClassVar[type[serializers.Serializer[Any]]] = PageQuerySerializer
    output_serializer: ClassVar[type[serializers.Serializer[Any]]]
    # Functions, each wrapped in staticmethod (mypy reads a Callable class attribute as a method, hence `...`).
    # selector: (owner, **filters) -> the rows. older_than: (rows, cursor id) -> the older rows, for rows that keep
    # an order of their own (pagination.page_of); None: the page is ordered by id.
    selector: ClassVar[Callable[..., QuerySet[Any]]]
    older_than: ClassVar[Callable[..., QuerySet[Any]] | None] = None

    def owner(self, **path: str) -> Any:
        """What the list belongs to: the key, or an object the route's path names (read before the query, so a
        404 for it comes first)."""
        return self.agent_key

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        """The selector's keyword arguments for this query."""
        return {}

    def program_filter(self, query: dict[str, Any]) -> Program | None:
        """The program ?program_id= names (404 when the key may not see it), or None without one."""
        return agent_program_get(self.agent_key, query["program_id"]) if "program_id" in query else None

    def page_data(self, page: list[Any]) -> Any:
        """What the answer's `data` renders from the page's rows."""
        return page

    def page_serializer(self, query: dict[str, Any]) -> type[serializers.Serializer[Any]]:
        return self.output_serializer

    def output_context(self, page: list[Any]) -> dict[str, Any]:
        return {}

    def get(self, request: Request, **path: str) -> Response:
        owner = self.owner(**path)
        query = query_of(self.query_serializer, request)
        rows = type(self).selector(owner, **self.filters(query))
        page, next_cursor = page_of(rows, query=query, older_than=type(self).older_than)
        body = {"data": self.page_data(page), "next_cursor": next_cursor}
        return Response(self.page_serializer(query)(body, context=self.output_context(page)).data)


L = TypeVar("L", bound=type[AgentListApi])


def list_schema(
    *,
    summary: str,
    error_statuses: Sequence[int],
    description: str | None = None,
    operation_id: str | None = None,
    path_parameters: Sequence[OpenApiParameter] = (),
) -> Callable[[L], L]:
    """A list view's OpenAPI operation (GET): its parameters (those of its path, then its query serializer's) and
    its 200 read from the view's serializers, with the errors it may answer (serializers.errors)."""

    def describe(view: L) -> L:
        operation = extend_schema(
            operation_id=operation_id,
            summary=summary,
            description=description,
            parameters=[*path_parameters, view.query_serializer],
            responses={200: view.output_serializer, **errors(*error_statuses)},
        )
        described: L = extend_schema_view(get=operation)(view)
        return described

    return describe
