"""What every agent route answers alike: the errors it may answer (OpenAPI) and the two envelopes a body comes in,
{"data": ...} and, for a list, {"data": [...], "next_cursor": ...}. Each envelope is a serializer class that both
renders the body and describes it."""

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from core.api.schema import PLATFORM_ERROR, TYPED_ERROR

ERROR_DESCRIPTIONS = {
    400: "invalid_request: a bad parameter or body; the message names it",
    401: "missing_api_key, invalid_api_key, api_key_revoked, api_key_expired or wrong_credential",
    403: "missing_scope: the key lacks the scope the operation needs (details.scope)",
    404: "not_found: no such object, or one outside the key's workspace or programs",
    409: "idempotency_conflict: the Idempotency-Key was used with another body",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """The errors of an agent operation: the given statuses plus 401, 403, the typed 429 and 500."""
    described = {
        status: OpenApiResponse(PLATFORM_ERROR, description=ERROR_DESCRIPTIONS[status])
        for status in sorted({401, 403, *statuses})
    }
    described[429] = OpenApiResponse(
        TYPED_ERROR, description="rate_limited: 120 calls a minute per key; see Retry-After"
    )
    described[500] = OpenApiResponse(PLATFORM_ERROR, description="internal_error; the request id is in X-Request-ID")
    return described


def page_serializer(
    name: str, item: type[serializers.Serializer[Any]] | serializers.BaseSerializer[Any]
) -> type[serializers.Serializer[Any]]:
    """The body of a list route, {"data": [item, ...], "next_cursor": ...}, rendered from
    {"data": rows, "next_cursor": cursor}; `name` is its schema component. `item` is the item serializer class, or a
    serializer of many items."""
    items = item(many=True) if isinstance(item, type) else item
    fields: dict[str, Any] = {
        "data": items,
        "next_cursor": serializers.CharField(
            allow_null=True, help_text="Pass as ?cursor= for the next page; null on the last"
        ),
    }
    module = item.__module__ if isinstance(item, type) else type(item).__module__
    return type(f"{name}Serializer", (serializers.Serializer,), {**fields, "__module__": module})


def result_serializer(name: str, item: serializers.Serializer[Any]) -> type[serializers.Serializer[Any]]:
    """The body of a route answering one object, {"data": item}, rendered from {"data": row}; `name` is its schema
    component."""
    return type(f"{name}Serializer", (serializers.Serializer,), {"data": item, "__module__": type(item).__module__})
