"""OpenAPI: how our authentication classes and envelopes appear in the generated description."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers


class ProgramKeyScheme(OpenApiAuthenticationExtension):
    target_class = "core.api.auth.ProgramKeyAuthentication"
    name = "programKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "Program API key (`aff_…`; legacy keys without the prefix still work). "
                "Test keys (`aff_test_…`) make every call test mode."
            ),
        }


class DashboardSessionScheme(OpenApiAuthenticationExtension):
    target_class = "core.api.auth.DashboardSessionAuthentication"
    name = "dashboardSession"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "Signed-in dashboard session",
        }


PLATFORM_ERROR = inline_serializer(
    "PlatformError",
    fields={
        "data": serializers.JSONField(allow_null=True, help_text="Always null"),
        "error": inline_serializer(
            "PlatformErrorBody",
            fields={
                "status": serializers.IntegerField(),
                "name": serializers.CharField(help_text="BadRequestError, UnauthorizedError, …"),
                "message": serializers.CharField(),
                "details": serializers.DictField(),
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
