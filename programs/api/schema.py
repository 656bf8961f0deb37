"""OpenAPI: how program-key authentication appears in the generated description (registered by ProgramsConfig),
and the parameters and errors shared by the program-member routes."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import Direction, OpenApiParameter, OpenApiResponse

from core.api.schema import PLATFORM_ERROR
from programs.api import auth


class ProgramKeyScheme(OpenApiAuthenticationExtension):
    target_class = "programs.api.auth.ProgramKeyAuthentication"
    name = "programKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "Program API key (`aff_…`; legacy keys without the prefix still work). "
                "Test keys (`aff_test_…`) make every call test mode."
            ),
        }

    def get_security_requirement(self, auto_schema: AutoSchema) -> dict[str, list[Any]] | list[dict[str, list[Any]]]:
        # Click never needs the key and lead works without one (browser mode): both also accept no credential.
        if getattr(auto_schema.view, "program_key_mode", auth.REQUIRED) != auth.REQUIRED:
            return [{self.name: []}, {}]
        return {self.name: []}


PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")
MEMBER_ERRORS = {
    400: OpenApiResponse(PLATFORM_ERROR, description="Invalid request; the message names the parameter"),
    401: OpenApiResponse(PLATFORM_ERROR, description="Not signed in (a program key is never accepted)"),
    403: OpenApiResponse(PLATFORM_ERROR, description="No active membership allowing the action, or CSRF failed"),
    404: OpenApiResponse(PLATFORM_ERROR, description="Program not found"),
    500: OpenApiResponse(PLATFORM_ERROR, description="Server failure; the request id is in X-Request-ID"),
}


class SettingFieldExtension(OpenApiSerializerFieldExtension):
    """A program setting field describes itself (programs.api.serializers._Setting.schema)."""

    target_class = "programs.api.serializers._Setting"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = self.target.schema
        return schema
