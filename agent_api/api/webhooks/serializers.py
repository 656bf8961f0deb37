"""What the webhook routes read (query and body serializers) and answer (output serializers, which both render the
bodies and describe them in the OpenAPI document). An endpoint is never rendered with its secret, only its last
four characters; the create and rotate answers add the secret once."""

from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import IsoDateTimeField, StrictBooleanField, StrictCharField
from core.api.query import InstantField
from webhooks import messages as webhook_messages
from webhooks.models import ALL_EVENT_TYPES, DeliveryStatus, EventType, WebhookDelivery, WebhookEndpoint, WebhookEvent

from ... import messages
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

EVENT_TYPES = ", ".join(EventType.values)
URL_LIMIT = 2000
DESCRIPTION_LIMIT = 200


# --- input ----------------------------------------------------------------------------------------------------------


def _event_type_choice(field: str, help_text: str) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=EventType.values,
        required=False,
        error_messages={
            "invalid_choice": messages.WEBHOOK_EVENT_TYPE_FILTER_INVALID.format(field=field, known=EVENT_TYPES)
        },
        help_text=help_text,
    )


def _flag(field: str, help_text: str) -> StrictBooleanField:
    message = messages.WEBHOOK_FLAG_INVALID.format(field=field)
    return StrictBooleanField(
        required=False, help_text=help_text, error_messages={key: message for key in ("invalid", "null")}
    )


class EndpointsQuerySerializer(PageQuerySerializer):
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID,
        "Only this program's endpoints (404 when the key may not see it); without it, every endpoint, "
        "workspace-wide ones (program_id null) included",
    )


@extend_schema_field(
    {
        "oneOf": [
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
            {"type": "string", "enum": [ALL_EVENT_TYPES]},
        ]
    }
)
class EventTypesField(serializers.ListField):
    """A list of event types, or the bare "*" the docs allow for every type, taken as the model keeps it (["*"]).
    Any other bare string is still not a list."""

    def to_internal_value(self, data: Any) -> list[Any]:
        return super().to_internal_value([ALL_EVENT_TYPES] if data == ALL_EVENT_TYPES else data)


class AgentWebhookEndpointFieldsSerializer(serializers.Serializer[Any]):
    """What an endpoint is made of; on create url and event_types are required, on update every field is optional
    and only those sent change."""

    url = StrictCharField(
        max_length=URL_LIMIT,
        trim_whitespace=False,
        help_text="Where events are POSTed: http(s), public address (private, loopback and link-local addresses "
        "are refused unless the service allows them)",
        error_messages={
            **{key: webhook_messages.URL_INVALID for key in ("invalid", "blank", "max_length")},
            **{key: messages.WEBHOOK_URL_REQUIRED for key in ("required", "null")},
        },
    )
    event_types = EventTypesField(
        child=StrictCharField(
            error_messages={key: webhook_messages.EVENT_TYPES_REQUIRED for key in ("invalid", "blank", "null")}
        ),
        allow_empty=False,
        help_text=f'Event types to receive ({EVENT_TYPES}), or "*" (also ["*"]) for every type, including later ones',
        error_messages={
            key: webhook_messages.EVENT_TYPES_REQUIRED for key in ("required", "null", "not_a_list", "empty")
        },
    )
    description = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=DESCRIPTION_LIMIT,
        trim_whitespace=False,
        help_text="A note for its owner (at most 200 characters)",
        error_messages={key: messages.WEBHOOK_DESCRIPTION_INVALID for key in ("invalid", "null", "max_length")},
    )
    enabled = _flag("enabled", "false: nothing is sent to it (default true)")
    include_test_events = _flag(
        "include_test_events", "true: test-mode events (livemode false) are sent to it too (default false)"
    )


class AgentWebhookEndpointCreateSerializer(AgentWebhookEndpointFieldsSerializer):
    program_id = serializers.IntegerField(
        required=False,
        help_text="The program whose events it receives; without it, every program of the workspace (a key "
        "limited to programs must send it)",
        error_messages={key: messages.PROGRAM_ID_INVALID for key in ("invalid", "null", "max_string_length")},
    )


class AgentWebhookEndpointUpdateSerializer(AgentWebhookEndpointFieldsSerializer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class DeliveriesQuerySerializer(PageQuerySerializer):
    status = serializers.ChoiceField(
        choices=DeliveryStatus.values,
        required=False,
        error_messages={"invalid_choice": messages.WEBHOOK_DELIVERY_STATUS_INVALID},
        help_text="pending (an attempt is scheduled), succeeded, or failed (retries exhausted or endpoint disabled)",
    )
    event_type = _event_type_choice("event_type", "Only deliveries of events of this type")


class EventsQuerySerializer(PageQuerySerializer):
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID, "Only this program's events (404 when the key may not see it)"
    )
    type = _event_type_choice("type", "Only events of this type")


class AgentWebhookResendPeriodSerializer(serializers.Serializer[Any]):
    since = InstantField(
        message=messages.WEBHOOK_SINCE_INVALID,
        help_text="Events at or after this time (a date: from the start of that UTC day)",
        error_messages={"required": messages.WEBHOOK_SINCE_INVALID, "null": messages.WEBHOOK_SINCE_INVALID},
    )
    until = InstantField(
        message=messages.WEBHOOK_UNTIL_INVALID,
        help_text="Events before this time (a date: up to the end of that UTC day)",
        error_messages={"required": messages.WEBHOOK_UNTIL_INVALID, "null": messages.WEBHOOK_UNTIL_INVALID},
    )


# --- output ---------------------------------------------------------------------------------------------------------


# An endpoint as every read shows it. A previous secret is shown (by when it stops signing) only while it still signs,
# as of context["now"] (default: now).
class AgentWebhookEndpointSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField(allow_null=True, help_text="null: every program of the workspace")
    url = serializers.CharField()
    description = serializers.CharField()
    event_types = serializers.ListField(child=serializers.CharField(), help_text='["*"]: every type')
    enabled = serializers.BooleanField()
    include_test_events = serializers.BooleanField()
    secret_last4 = serializers.CharField(help_text="The last four characters of the secret (never the secret)")
    previous_secret_expires_at = serializers.SerializerMethodField(
        allow_null=True, help_text="After a rotation: until when the previous secret also signs; null otherwise"
    )
    disabled_at = IsoDateTimeField(allow_null=True)
    disabled_reason = serializers.CharField(
        help_text="Empty when disabled by its owner; otherwise why the service disabled it (a 410, failing too long)"
    )
    failing_since = IsoDateTimeField(allow_null=True, help_text="Since when every attempt has failed")
    consecutive_failures = serializers.IntegerField()
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_previous_secret_expires_at(self, endpoint: WebhookEndpoint) -> str | None:
        expires: datetime | None = endpoint.previous_secret_expires_at
        if expires is None or expires <= (self.context.get("now") or timezone.now()):
            return None
        return expires.isoformat()


# The create and rotate answers: the endpoint with its new secret, context["secret"].
class AgentWebhookEndpointWithSecretSerializer(AgentWebhookEndpointSerializer):
    secret = serializers.SerializerMethodField(
        help_text="The signing secret (whsec_…), answered this once: store it now, no read shows it again"
    )

    def get_secret(self, endpoint: WebhookEndpoint) -> str:
        secret: str = self.context["secret"]
        return secret


class AgentWebhookEndpointDeletionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    deleted = serializers.BooleanField()


# A delivery, with its event (select_related).
class AgentWebhookDeliverySerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    endpoint_id = serializers.IntegerField()
    event_id = serializers.CharField(
        source="event.public_id", help_text="The event's id (evt_…), also the webhook-id header"
    )
    event_type = serializers.CharField(source="event.type")
    livemode = serializers.BooleanField(source="event.livemode")
    event_created_at = IsoDateTimeField(source="event.created_at")
    status = serializers.ChoiceField(choices=DeliveryStatus.values)
    attempts = serializers.IntegerField(help_text="HTTP requests made so far")
    next_attempt_at = serializers.SerializerMethodField(allow_null=True, help_text="When pending: the next attempt")
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    delivered_at = IsoDateTimeField(allow_null=True)
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_next_attempt_at(self, delivery: WebhookDelivery) -> str | None:
        if delivery.status != DeliveryStatus.PENDING or delivery.next_attempt_at is None:
            return None
        return delivery.next_attempt_at.isoformat()


class AgentWebhookAttemptSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    number = serializers.IntegerField(help_text="1 for the first request of the delivery, then 2, ...")
    manual = serializers.BooleanField(help_text="Sent because its owner resent the delivery")
    started_at = IsoDateTimeField()
    status_code = serializers.IntegerField(allow_null=True, help_text="null: no HTTP answer (see error)")
    latency_ms = serializers.IntegerField()
    succeeded = serializers.BooleanField()
    response_excerpt = serializers.CharField(help_text="The start of the receiver's answer")
    error = serializers.CharField(
        help_text='Why it failed; "outcome unknown: …" when the worker stopped while the request was out'
    )
    in_flight = serializers.BooleanField(help_text="true: the request is out and its outcome not recorded yet")


# Rendered from {"delivery": delivery, "queued": bool}.
class AgentWebhookResendSerializer(serializers.Serializer[Any]):
    delivery = AgentWebhookDeliverySerializer()
    queued = serializers.BooleanField(
        help_text="false: it was pending already (its next attempt is scheduled), nothing changed"
    )


# Rendered from {"endpoint_id", "since", "until", "queued"} (since and until as datetimes).
class AgentWebhookResendFailedSerializer(serializers.Serializer[Any]):
    endpoint_id = serializers.IntegerField()
    since = IsoDateTimeField()
    until = IsoDateTimeField(help_text="Exclusive")
    queued = serializers.IntegerField(help_text="Failed deliveries sent again")


# An event as receivers get it (WebhookEvent.payload(), its times already text), and whether `svc trigger` made it (an
# example, no real change).
class AgentWebhookEventSerializer(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="evt_…, the webhook-id receivers dedupe on")
    type = serializers.CharField()
    created_at = serializers.DateTimeField()
    program_id = serializers.IntegerField()
    livemode = serializers.BooleanField()
    data = serializers.DictField(help_text="The payload of the type (docs/webhooks.md)")  # type: ignore[assignment]
    synthetic = serializers.BooleanField(help_text="Made by `svc trigger`: an example, no real change behind it")

    def to_representation(self, instance: WebhookEvent) -> dict[str, Any]:
        return super().to_representation({**instance.payload(), "synthetic": instance.synthetic})


AgentWebhookEndpointListSerializer = page_serializer("AgentWebhookEndpointList", AgentWebhookEndpointSerializer)
AgentWebhookEndpointResultSerializer = result_serializer("AgentWebhookEndpointResult", AgentWebhookEndpointSerializer())
AgentWebhookEndpointWithSecretResultSerializer = result_serializer(
    "AgentWebhookEndpointWithSecretResult", AgentWebhookEndpointWithSecretSerializer()
)
AgentWebhookEndpointDeletedSerializer = result_serializer(
    "AgentWebhookEndpointDeleted", AgentWebhookEndpointDeletionSerializer()
)
AgentWebhookDeliveryListSerializer = page_serializer("AgentWebhookDeliveryList", AgentWebhookDeliverySerializer)
AgentWebhookAttemptListSerializer = page_serializer("AgentWebhookAttemptList", AgentWebhookAttemptSerializer)
AgentWebhookResendResultSerializer = result_serializer("AgentWebhookResendResult", AgentWebhookResendSerializer())
AgentWebhookResendFailedResultSerializer = result_serializer(
    "AgentWebhookResendFailedResult", AgentWebhookResendFailedSerializer()
)
AgentWebhookEventListSerializer = page_serializer("AgentWebhookEventList", AgentWebhookEventSerializer)
