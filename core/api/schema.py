"""OpenAPI: how our authentication classes, envelopes and per-view policy (rate limits, request ids,
key rotation) appear in the generated description. The view's class attributes are the single source:
the description follows what BaseApi really sends."""

from types import SimpleNamespace
from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import get_doc, get_lib_doc_excludes
from drf_spectacular.utils import Direction, OpenApiResponse, extend_schema_field, inline_serializer
from rest_framework import serializers

from core import limits
from core.api import ratelimit
from core.api.envelopes import TYPED
from core.api.fields import AnyField, LeanSerializer


class DashboardSessionScheme(OpenApiAuthenticationExtension):
    target_class = "core.api.auth.DashboardSessionAuthentication"
    name = "dashboardSession"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": (
                "Signed-in dashboard session. POST and PATCH also need the CSRF token: "
                "the `csrftoken` cookie repeated in the `X-CSRFToken` header."
            ),
        }


@extend_schema_field({"type": "null"})
class AlwaysNullField(serializers.Field[None, None, None, Any]):
    """`data` of an error: always JSON null."""


PLATFORM_ERROR = inline_serializer(
    "PlatformError",
    fields={
        "data": AlwaysNullField(help_text="Always null"),
        "error": inline_serializer(
            "PlatformErrorBody",
            fields={
                "status": serializers.IntegerField(help_text="The HTTP status"),
                "name": serializers.CharField(help_text="BadRequestError, UnauthorizedError, …"),
                "message": serializers.CharField(help_text="What went wrong; match on status and message"),
                "details": serializers.DictField(help_text="Empty unless noted"),
                "code": serializers.CharField(required=False, help_text="Always present on sale and refund"),
            },
        ),
    },
)

TYPED_ERROR = inline_serializer(
    "TypedError",
    fields={
        "error": inline_serializer(
            "TypedErrorBody",
            fields={
                "code": serializers.CharField(
                    help_text="rate_limited, api_key_rotation_required, link_disabled, invalid_key, internal_error"
                ),
                "message": serializers.CharField(),
                "status": serializers.IntegerField(required=False, help_text="With rate_limited"),
                "hint": serializers.CharField(required=False),
                "docs_url": serializers.CharField(required=False),
                "retry_after_seconds": serializers.IntegerField(required=False),
            },
        )
    },
)

TEST_MODE = inline_serializer(
    "TestModeResult",
    fields={
        "success": serializers.BooleanField(),
        "message": serializers.CharField(),
        "data": inline_serializer(
            "TestModeData",
            fields={
                "eventId": serializers.IntegerField(),
                "programId": serializers.IntegerField(),
                "test_mode": serializers.BooleanField(),
            },
        ),
    },
)

# A program-key route answers a retired key with the typed envelope, other 401s with the route's own.
PLATFORM_OR_TYPED_ERROR = {
    "anyOf": [{"$ref": "#/components/schemas/PlatformError"}, {"$ref": "#/components/schemas/TypedError"}]
}
RATE_LIMITED = OpenApiResponse(TYPED_ERROR, description="rate_limited; nothing recorded; wait Retry-After seconds")


def _header(description: str, *, required: bool, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"schema": schema or {"type": "string"}, "description": description, "required": required}


INTEGER = {"type": "integer"}
# Every answer of a rate-limited route, refusals before the count included (core.middleware).
RATE_LIMIT_HEADERS = {
    ratelimit.LIMIT_HEADER: _header("Calls allowed per minute in this bucket", required=True, schema=INTEGER),
    ratelimit.REMAINING_HEADER: _header("Calls left in the current minute", required=True, schema=INTEGER),
    ratelimit.RESET_HEADER: _header("Unix time when the bucket refills", required=True, schema=INTEGER),
}
RETRY_AFTER = {"Retry-After": _header("Seconds to wait before retrying", required=True, schema=INTEGER)}
REQUEST_ID = {"X-Request-ID": _header("This request's id, as logged by the server", required=True)}
ROTATION_HEADERS = {
    "Deprecation": _header("`@<unix seconds>` when the key was marked for rotation", required=False),
    "Sunset": _header("HTTP-date of the key's rotation deadline", required=False),
    "Link": _header('`<…/docs/errors#api_key_rotation_required>; rel="deprecation"`', required=False),
}
WWW_AUTHENTICATE = {"WWW-Authenticate": _header("The credential this route expects", required=True)}


class ApiAutoSchema(AutoSchema):
    """Adds what every route of a kind shares, read from the view's policy attributes (core.api.base):
    the 429 and rate-limit headers of rate-limited routes, X-Request-ID, the key-rotation headers of
    program-key routes, the request filter's 400/413/414/431, and minLength 1 on request strings DRF
    refuses when blank."""

    def _view_policy(self, name: str, default: Any = None) -> Any:
        return getattr(self.view, name, default)

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if self._view_policy("rate_scope") is not None and "429" not in responses:
            responses["429"] = self._get_response_for_code(RATE_LIMITED, "429", direction=direction)
        # core.middleware.RequestLimitsMiddleware answers these before the view, in the view's envelope.
        refusals = {
            "400": "A query parameter or header that cannot be stored (NUL, lone surrogate)",
            "414": f"URL longer than {limits.MAX_URL_BYTES} bytes",
            "431": (
                f"More than {limits.MAX_HEADER_FIELDS} headers, a header over {limits.MAX_HEADER_FIELD_BYTES} bytes "
                f"or {limits.MAX_HEADER_BYTES} bytes of headers in all"
            ),
        }
        # By Content-Length, whatever the method: a DELETE with a body is refused too (a GET is sent without one).
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            refusals["413"] = f"Body larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes; nothing recorded"
        error = TYPED_ERROR if self._view_policy("envelope") == TYPED else PLATFORM_ERROR
        for status, description in refusals.items():
            if status not in responses:
                described = OpenApiResponse(error, description=description)
                responses[status] = self._get_response_for_code(described, status, direction=direction)
        return responses

    def _get_response_headers_for_code(self, status_code: str, direction: Direction = "response") -> dict[str, Any]:
        headers: dict[str, Any] = {}
        if self._view_policy("rate_scope") is not None:
            headers.update(RATE_LIMIT_HEADERS)
            if status_code == "429":
                headers.update(RETRY_AFTER)
        if self._request_id_sent(status_code):
            headers.update(REQUEST_ID)
        if status_code == "401":
            headers.update(WWW_AUTHENTICATE)
        if self._view_policy("program_key_mode") is not None:
            headers.update(ROTATION_HEADERS)
        headers.update(super()._get_response_headers_for_code(status_code, direction))
        return headers

    def _request_id_sent(self, status_code: str) -> bool:
        # The view decides per response (GET /api/v1/cli/status sends it on its 500s only).
        decide = getattr(self.view, "should_send_request_id", None)
        return decide is not None and bool(decide(SimpleNamespace(status_code=int(status_code))))

    # drf-spectacular's AutoSchema already narrows DRF's get_description(path, method) to this signature.
    def get_description(self) -> str:  # type: ignore[override]
        # Only the view's own docstring: a base class's docstring is a note for maintainers.
        method_doc = get_doc(getattr(self.view, self.method.lower(), None))
        own_doc = type(self.view).__dict__.get("__doc__")
        return method_doc or (get_doc(type(self.view)) if own_doc else "")

    def _get_parameters(self) -> list[dict[str, Any]]:
        parameters = super()._get_parameters()
        # Views that read their query through dashboard.api.serializers.present() treat `?name=` as absent.
        if self._view_policy("blank_query_means_absent", False):
            for parameter in parameters:
                if parameter["in"] == "query":
                    parameter["schema"] = {"anyOf": [parameter["schema"], {"type": "string", "maxLength": 0}]}
        return parameters

    def _map_basic_serializer(self, serializer: serializers.Serializer[Any], direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(serializer, direction)
        # A serializer may declare how many fields the route needs at least (an empty PATCH is refused).
        min_properties = getattr(serializer, "min_properties", None)
        if min_properties:
            schema["minProperties"] = min_properties
        return schema

    def _map_serializer_field(
        self, field: AnyField, direction: Direction, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(field, direction, bypass_extensions)
        # DRF refuses "" for a CharField without allow_blank; say so where the caller sends it.
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and not isinstance(field, serializers.ChoiceField)
            and not field.allow_blank
            and "minLength" not in schema
            and "type" in schema
        ):
            schema["minLength"] = 1
        return schema


def lib_doc_excludes() -> list[type]:
    """LeanSerializer's docstring is a performance note; input serializers document themselves."""
    return [*get_lib_doc_excludes(), LeanSerializer]
