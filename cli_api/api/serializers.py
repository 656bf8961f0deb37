"""The bodies of the command-line helper routes (docs/cli.md): each output serializer renders its body and is the
OpenAPI description of it. Times render as datetime.isoformat() writes them, as they always have."""

from typing import Any

from rest_framework import serializers

from core.api.fields import IsoDateTimeField
from core.api.output import output_serializer
from programs.models import Program, ProgramKey
from programs.selectors import rate_number
from tracking.api.schema import ReadinessVerdictSerializer


class CommissionRateField(serializers.FloatField):
    """A program's commission rate (a Decimal) as a JSON number, as programs.selectors.rate_number gives it: whole
    rates without a fraction (20), others as decimals (12.5)."""

    def to_representation(self, value: Any) -> Any:
        return rate_number(value)


class CliProgramSerializer(serializers.Serializer[Any]):
    """A program as `svc init` and `svc programs` show it, its keys masked."""

    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    domain = serializers.CharField()
    advertiser_id = serializers.IntegerField(source="workspace_id")
    advertiser_name = serializers.CharField(source="workspace.name")
    commission_type = serializers.CharField()
    commission_rate = CommissionRateField()
    duration_months = serializers.IntegerField()
    cookie_duration = serializers.IntegerField()
    api_token_masked = serializers.SerializerMethodField()
    test_api_token_masked = serializers.SerializerMethodField()
    created_at = IsoDateTimeField()

    def to_representation(self, instance: Program) -> dict[str, Any]:
        # The program's keys are read once (prefetched by the list) for both masked fields.
        self._masked_keys = {key.mode: key.masked for key in instance.keys.all()}
        return super().to_representation(instance)

    def get_api_token_masked(self, program: Program) -> str:
        return self._masked_keys.get(ProgramKey.Mode.LIVE, "")

    def get_test_api_token_masked(self, program: Program) -> str:
        return self._masked_keys.get(ProgramKey.Mode.TEST, "")


class CliProgramListedSerializer(CliProgramSerializer):
    """A program of `svc programs`, with the account's role in its workspace (context "roles": workspace id -> role)."""

    role = serializers.SerializerMethodField()

    def get_role(self, program: Program) -> str:
        role: str = self.context["roles"][program.workspace_id]
        return role


class CliAuthStartDataSerializer(serializers.Serializer[Any]):
    state = serializers.CharField()
    login_url = serializers.URLField()
    user_code = serializers.CharField()
    expires_at = IsoDateTimeField()
    expires_in = serializers.IntegerField()
    interval = serializers.IntegerField()


class CliAuthCallbackDataSerializer(serializers.Serializer[Any]):
    status = serializers.CharField()


class CliPollUserSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()


class CliAuthPollDataSerializer(serializers.Serializer[Any]):
    """Pending: status, expires_at and interval. Complete (once): the login token and its account instead of the
    interval."""

    status = serializers.ChoiceField(["pending", "expired", "denied", "complete"])
    expires_at = IsoDateTimeField()
    interval = serializers.IntegerField(required=False)
    token = serializers.CharField(required=False, help_text="Only with status complete, once")
    token_type = serializers.CharField(required=False)
    token_expires_at = IsoDateTimeField(required=False)
    user = CliPollUserSerializer(required=False)


class CliAuthLogoutDataSerializer(serializers.Serializer[Any]):
    revoked = serializers.BooleanField()


class CliInitDataSerializer(serializers.Serializer[Any]):
    program = CliProgramSerializer()
    api_key = serializers.CharField(help_text="Shown once")
    test_api_key = serializers.CharField(help_text="Shown once")


class CliStatusProgramSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    domain = serializers.CharField()


class CliStatusKeySerializer(serializers.Serializer[Any]):
    mode = serializers.CharField()
    masked = serializers.CharField()


class CliStatusDataSerializer(serializers.Serializer[Any]):
    program = CliStatusProgramSerializer()
    key = CliStatusKeySerializer()
    readiness = ReadinessVerdictSerializer(help_text="The readiness verdict (insight.readiness)")


class CliTestEventLimitSerializer(serializers.Serializer[Any]):
    runs_per_hour = serializers.IntegerField()
    runs_remaining = serializers.IntegerField()


class CliTestEventDataSerializer(serializers.Serializer[Any]):
    """The verification run (tracking.services.verification.verification_run) and the hourly limit; click_id and
    customer_key come once a click was recorded."""

    success = serializers.BooleanField()
    run_id = serializers.CharField()
    program_id = serializers.IntegerField()
    steps = serializers.ListField(child=serializers.DictField())
    click_id = serializers.CharField(required=False)
    customer_key = serializers.CharField(required=False)
    duration_ms = serializers.FloatField()
    limit = CliTestEventLimitSerializer()


class CliWebhookEventSerializer(serializers.Serializer[Any]):
    """One event of the program's stream (a WebhookEvent)."""

    cursor = serializers.IntegerField(
        source="pk", help_text="The event's place in the program's stream (pass as `after`)"
    )
    event = serializers.DictField(
        source="payload", help_text="The envelope receivers get: id, type, created_at, program_id, livemode, data"
    )


class CliWebhookEventsMetaSerializer(serializers.Serializer[Any]):
    cursor = serializers.IntegerField()
    has_more = serializers.BooleanField()


# The bodies: each route's data under "data" (a key a class body cannot declare: Serializer.data is the body).
CliAuthStartSerializer = output_serializer("CliAuthStartSerializer", {"data": CliAuthStartDataSerializer()})
CliAuthCallbackSerializer = output_serializer("CliAuthCallbackSerializer", {"data": CliAuthCallbackDataSerializer()})
CliAuthPollSerializer = output_serializer("CliAuthPollSerializer", {"data": CliAuthPollDataSerializer()})
CliAuthLogoutSerializer = output_serializer("CliAuthLogoutSerializer", {"data": CliAuthLogoutDataSerializer()})
CliInitSerializer = output_serializer("CliInitSerializer", {"data": CliInitDataSerializer()})
CliProgramsSerializer = output_serializer("CliProgramsSerializer", {"data": CliProgramListedSerializer(many=True)})
CliStatusSerializer = output_serializer("CliStatusSerializer", {"data": CliStatusDataSerializer()})
CliTestEventSerializer = output_serializer("CliTestEventSerializer", {"data": CliTestEventDataSerializer()})
CliWebhookEventsPageSerializer = output_serializer(
    "CliWebhookEventsPageSerializer",
    {"data": CliWebhookEventSerializer(many=True), "meta": CliWebhookEventsMetaSerializer()},
)
CliWebhookTriggerSerializer = output_serializer("CliWebhookTriggerSerializer", {"data": CliWebhookEventSerializer()})
