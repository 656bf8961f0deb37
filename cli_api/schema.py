"""OpenAPI for the command-line helper routes: the login-token scheme, the error responses and the callback's input.
The success bodies are their output serializers (cli_api/api/serializers.py)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from core.api.schema import PLATFORM_ERROR, TYPED_ERROR


class LoginTokenScheme(OpenApiAuthenticationExtension):
    target_class = "cli_api.auth.LoginTokenAuthentication"
    name = "loginToken"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Login token from `svc login` (`svcl_…`), handed out once by GET /api/v1/cli/auth/poll.",
        }


def errors(*statuses: int, typed_429: bool = True) -> dict[int, OpenApiResponse]:
    described = {status: OpenApiResponse(PLATFORM_ERROR) for status in statuses}
    if typed_429:
        described[429] = OpenApiResponse(TYPED_ERROR, description="rate_limited; see Retry-After")
    described[500] = OpenApiResponse(PLATFORM_ERROR, description="message ends with (request_id: <id>)")
    return described


# The callback's body, read by login_session_complete (which answers 400 when a field is missing).
CALLBACK_INPUT = inline_serializer(
    "CliAuthCallbackInput", fields={"state": serializers.CharField(), "id_token": serializers.CharField()}
)
