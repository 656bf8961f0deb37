"""Response shapes of the agent routes (OpenAPI)."""

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from core.api.schema import PLATFORM_ERROR, TYPED_ERROR
from programs.api.serializers import PROGRAM_SETTINGS_FIELDS
from tracking.api.schema import READINESS_VERDICT

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


AGENT_PROGRAM_FIELDS: dict[str, serializers.Field] = {
    **PROGRAM_SETTINGS_FIELDS,
    "cookie_duration": serializers.IntegerField(),
    "created_at": serializers.DateTimeField(),
}
NEXT_CURSOR = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for the next page; null on the last")

PROGRAMS_OK = inline_serializer(
    "AgentProgramList",
    fields={
        "data": inline_serializer("AgentProgram", fields=AGENT_PROGRAM_FIELDS, many=True),
        "next_cursor": NEXT_CURSOR,
    },
)
PROGRAM_OK = inline_serializer(
    "AgentProgramResult",
    fields={
        "data": inline_serializer("AgentProgramDetail", fields={**AGENT_PROGRAM_FIELDS, "readiness": READINESS_VERDICT})
    },
)
