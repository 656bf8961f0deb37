"""OpenAPI for the command-line helper routes: the login-token scheme and the response bodies of docs/cli.md."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from core.api.schema import PLATFORM_ERROR, TYPED_ERROR


class LoginTokenScheme(OpenApiAuthenticationExtension):
    target_class = "cli_api.auth.LoginTokenAuthentication"
    name = "loginToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Login token from `svc login` (`svcl_…`), handed out once by GET /api/v1/cli/auth/poll.",
        }


def data_of(name: str, fields: dict) -> serializers.Serializer:
    return inline_serializer(name, fields={"data": inline_serializer(f"{name}Data", fields=fields)})


def errors(*statuses: int, typed_429: bool = True) -> dict[int, OpenApiResponse]:
    described = {status: OpenApiResponse(PLATFORM_ERROR) for status in statuses}
    if typed_429:
        described[429] = OpenApiResponse(TYPED_ERROR, description="rate_limited; see Retry-After")
    described[500] = OpenApiResponse(PLATFORM_ERROR, description="message ends with (request_id: <id>)")
    return described


PROGRAM_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "name": serializers.CharField(),
    "domain": serializers.CharField(),
    "advertiser_id": serializers.IntegerField(),
    "advertiser_name": serializers.CharField(),
    "commission_type": serializers.CharField(),
    "commission_rate": serializers.FloatField(),
    "duration_months": serializers.IntegerField(),
    "cookie_duration": serializers.IntegerField(),
    "api_token_masked": serializers.CharField(),
    "test_api_token_masked": serializers.CharField(),
    "created_at": serializers.DateTimeField(),
}

START_OK = data_of(
    "CliAuthStart",
    {
        "state": serializers.CharField(),
        "login_url": serializers.URLField(),
        "user_code": serializers.CharField(),
        "expires_at": serializers.DateTimeField(),
        "expires_in": serializers.IntegerField(),
        "interval": serializers.IntegerField(),
    },
)
CALLBACK_INPUT = inline_serializer(
    "CliAuthCallbackInput", fields={"state": serializers.CharField(), "id_token": serializers.CharField()}
)
CALLBACK_OK = data_of("CliAuthCallback", {"status": serializers.CharField()})
POLL_OK = data_of(
    "CliAuthPoll",
    {
        "status": serializers.ChoiceField(["pending", "expired", "denied", "complete"]),
        "expires_at": serializers.DateTimeField(),
        "interval": serializers.IntegerField(required=False),
        "token": serializers.CharField(required=False, help_text="Only with status complete, once"),
        "token_type": serializers.CharField(required=False),
        "token_expires_at": serializers.DateTimeField(required=False),
        "user": serializers.DictField(required=False),
    },
)
LOGOUT_OK = data_of("CliAuthLogout", {"revoked": serializers.BooleanField()})
INIT_OK = data_of(
    "CliInit",
    {
        "program": inline_serializer("CliProgram", fields=PROGRAM_FIELDS),
        "api_key": serializers.CharField(help_text="Shown once"),
        "test_api_key": serializers.CharField(help_text="Shown once"),
    },
)
PROGRAMS_OK = inline_serializer(
    "CliPrograms",
    fields={
        "data": inline_serializer(
            "CliProgramListed", fields={**PROGRAM_FIELDS, "role": serializers.CharField()}, many=True
        )
    },
)
STATUS_OK = data_of(
    "CliStatus",
    {
        "program": serializers.DictField(),
        "key": serializers.DictField(),
        "readiness": serializers.DictField(help_text="The readiness verdict (tracking.insight.readiness)"),
    },
)
TEST_EVENT_OK = data_of(
    "CliTestEvent",
    {
        "success": serializers.BooleanField(),
        "run_id": serializers.CharField(),
        "program_id": serializers.IntegerField(),
        "steps": serializers.ListField(child=serializers.DictField()),
        "click_id": serializers.CharField(required=False),
        "customer_key": serializers.CharField(required=False),
        "duration_ms": serializers.FloatField(),
        "limit": serializers.DictField(),
    },
)


def _webhook_event_item() -> dict[str, serializers.Field]:
    return {
        "cursor": serializers.IntegerField(help_text="The event's place in the program's stream (pass as `after`)"),
        "event": serializers.DictField(
            help_text="The envelope receivers get: id, type, created_at, program_id, livemode, data"
        ),
    }


WEBHOOK_EVENTS_OK = inline_serializer(
    "CliWebhookEventsPage",
    {
        "data": serializers.ListField(child=inline_serializer("CliWebhookEvent", _webhook_event_item())),
        "meta": inline_serializer(
            "CliWebhookEventsMeta", {"cursor": serializers.IntegerField(), "has_more": serializers.BooleanField()}
        ),
    },
)
WEBHOOK_TRIGGER_OK = data_of("CliWebhookTrigger", _webhook_event_item())
