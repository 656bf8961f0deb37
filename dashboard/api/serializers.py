"""Inputs and answers of the dashboard API's own routes. The query strings and answers it shares with other
surfaces are tracking's (tracking.api.queries, tracking.api.schema) and the request log's (programs.api.calllog)."""

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField

from core.api.fields import IsoDateTimeField, LeanSerializer, StrictCharField, spec_messages
from core.api.output import output_serializer
from core.api.query import InstantField
from programs.api.serializers import PROGRAM_SETTINGS_FIELDS
from tracking.api.schema import ReadinessVerdictSerializer
from tracking.services.verification import SYNTHETIC_EVENT_TYPES

TEST_EVENTS_DEFAULT_WINDOW = timedelta(hours=1)


class TestEventInputSerializer(LeanSerializer):
    program_id = serializers.JSONField(help_text="The program's id (integer or numeric string)")
    event_type = serializers.ChoiceField(
        choices=SYNTHETIC_EVENT_TYPES,
        error_messages={
            **spec_messages("event_type must be one of click, lead, sale"),
            "required": "event_type is required",
        },
    )
    click_id = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=255,
        error_messages=spec_messages("click_id must be a string of at most 255 characters"),
        help_text="lead: the test click to attach to (else one is made); sale: attribute to this test click",
    )
    customer_key = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=255,
        error_messages=spec_messages("customer_key must be a string of at most 255 characters"),
        help_text="lead: the user id to save (default generated); sale: attribute to this test customer",
    )


class CheckTestEventsInputSerializer(LeanSerializer):
    program_id = serializers.JSONField(help_text="The program's id (integer or numeric string)")
    since = InstantField(
        message="since must be an ISO 8601 date or date-time",
        required=False,
        allow_null=True,
        help_text="Default: one hour ago",
    )


# --- Answers -------------------------------------------------------------------------------------------------
# Output serializers: the views render their bodies through them and the OpenAPI description is read from them, so
# a key the serializer lacks is never answered. Each class is named after its component in the description
# (drf-spectacular drops "Serializer"). Times arrive as ISO strings (core.api.query.iso), which DateTimeField
# passes through unchanged.


class AbsentOrNullCharField(serializers.CharField):
    """A nullable field that some items do not have: absent stays absent (DRF would render a missing nullable
    field as null)."""

    def get_attribute(self, instance: Mapping[str, Any]) -> Any:
        if self.field_name not in instance:
            raise SkipField()
        return super().get_attribute(instance)


class KeyRotationSerializer(serializers.Serializer[Any]):
    flagged = serializers.BooleanField()
    marked_at = serializers.DateTimeField(allow_null=True)
    deadline = serializers.DateTimeField(allow_null=True)
    retired = serializers.BooleanField()


class StripeStateSerializer(serializers.Serializer[Any]):
    connected = serializers.BooleanField()
    account_id = serializers.CharField()
    connected_at = serializers.DateTimeField(allow_null=True)
    last_event_at = serializers.DateTimeField(allow_null=True)
    last_event_type = serializers.CharField(allow_null=True)


# The settings fields are the settings route's own (programs.api.serializers), so this class is built from them.
TrackingStatusProgramSerializer = output_serializer(
    "TrackingStatusProgramSerializer",
    {
        **PROGRAM_SETTINGS_FIELDS,
        "cookie_window_days": serializers.IntegerField(),
        "key_rotation": KeyRotationSerializer(),
        "stripe": StripeStateSerializer(),
    },
)


class LastEventAtSerializer(serializers.Serializer[Any]):
    click = serializers.DateTimeField(allow_null=True)
    lead = serializers.DateTimeField(allow_null=True)
    sale = serializers.DateTimeField(allow_null=True)


class TrackingStatusSerializer(serializers.Serializer[Any]):
    program = TrackingStatusProgramSerializer()
    role = serializers.ChoiceField(choices=["owner", "admin", "member"])
    actions = serializers.ListField(child=serializers.CharField())
    last_event_at = LastEventAtSerializer()


# The status route's body (tracking.selectors.status.tracking_status_get under "data").
TrackingStatusResultSerializer = output_serializer(
    "TrackingStatusResultSerializer", {"data": TrackingStatusSerializer()}
)


class HasValueField(serializers.BooleanField):
    """Output only: whether the source value is set (a time, here), rendered true or false, never null."""

    def get_attribute(self, instance: Any) -> bool:
        return super().get_attribute(instance) is not None


# The events list's items (tracking.selectors.events): each type's row of values() renders through its type's
# serializer, keys in this order.
class ClickEventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    event_type = serializers.ChoiceField(choices=["click"])
    timestamp = IsoDateTimeField(source="click_timestamp")
    click_id = serializers.CharField()
    session_id = serializers.CharField()
    page_url = serializers.CharField()
    referrer_url = serializers.CharField()
    geo_country = serializers.CharField()
    geo_region = serializers.CharField()
    geo_city = serializers.CharField()
    device_type = serializers.CharField()
    device_os = serializers.CharField()
    browser_name = serializers.CharField()
    converted = HasValueField(source="customer__first_sale_at", help_text="The customer has a live sale")
    createdAt = IsoDateTimeField(source="created_at")


class LeadEventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    event_type = serializers.ChoiceField(choices=["lead"])
    timestamp = IsoDateTimeField(source="lead_timestamp")
    click_id = serializers.CharField()
    customer_key = serializers.CharField()
    session_id = serializers.CharField()
    page_url = serializers.CharField()
    converted = HasValueField(source="customer__first_sale_at", help_text="The customer has a live sale")
    createdAt = IsoDateTimeField(source="created_at")


class ConversionEventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    event_type = serializers.ChoiceField(choices=["conversion"])
    timestamp = IsoDateTimeField(source="sale_date")
    click_id = serializers.CharField()
    amount_cents = serializers.IntegerField()
    currency = serializers.CharField()
    sale_type = serializers.CharField()
    payment_status = serializers.CharField()
    processor_event_id = serializers.CharField(allow_null=True, help_text="The transaction_id")
    is_recurring = serializers.BooleanField()
    createdAt = IsoDateTimeField(source="created_at")


TRACKING_EVENT_SERIALIZERS: dict[str, type[serializers.Serializer[Any]]] = {
    "click": ClickEventSerializer,
    "lead": LeadEventSerializer,
    "conversion": ConversionEventSerializer,
}


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="TrackingEvent",
        serializers={kind: serializer() for kind, serializer in TRACKING_EVENT_SERIALIZERS.items()},
        resource_type_field_name="event_type",
    )
)
class TrackingEventField(serializers.Field[Mapping[str, Any], Any, Any, Any]):
    """Output only: an item of the events list, rendered by its type's serializer."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(read_only=True, **kwargs)
        self.renderers = {kind: serializer() for kind, serializer in TRACKING_EVENT_SERIALIZERS.items()}

    def to_representation(self, value: Mapping[str, Any]) -> Any:
        return self.renderers[value["event_type"]].to_representation(value)


class PaginationSerializer(serializers.Serializer[Any]):
    page = serializers.IntegerField()
    pageSize = serializers.IntegerField()
    pageCount = serializers.IntegerField()
    total = serializers.IntegerField()


class TrackingEventsMetaSerializer(serializers.Serializer[Any]):
    pagination = PaginationSerializer()


# The events list's body: the page of events and its pagination.
TrackingEventsResultSerializer = output_serializer(
    "TrackingEventsResultSerializer",
    {"data": serializers.ListField(child=TrackingEventField()), "meta": TrackingEventsMetaSerializer()},
)


# The dashboard's readiness route's body: the program-key route's verdict under "data".
TrackingReadinessResultSerializer = output_serializer(
    "TrackingReadinessResultSerializer", {"data": ReadinessVerdictSerializer()}
)


class VerificationStepSerializer(serializers.Serializer[Any]):
    step = serializers.CharField(help_text="click, lead or sale")
    ok = serializers.BooleanField()
    event_id = serializers.IntegerField(required=False)
    status = serializers.IntegerField(required=False)
    message = serializers.CharField(required=False)


class VerificationRunSerializer(serializers.Serializer[Any]):
    success = serializers.BooleanField(help_text="Every step passed")
    run_id = serializers.CharField()
    program_id = serializers.IntegerField()
    steps = serializers.ListField(child=VerificationStepSerializer())
    click_id = serializers.CharField(required=False)
    customer_key = serializers.CharField(required=False)
    duration_ms = serializers.FloatField()


# The verification run's body (tracking.services.verification.verification_run under "data").
VerificationResultSerializer = output_serializer("VerificationResultSerializer", {"data": VerificationRunSerializer()})


# One test event sent (tracking.services.verification.synthetic_event_send): each type has its own fields, in this
# order.
class TestEventSerializer(serializers.Serializer[Any]):
    event_type = serializers.CharField(help_text="click, lead or sale")
    program_id = serializers.IntegerField()
    test_mode = serializers.BooleanField()
    click_event_id = serializers.IntegerField(required=False, help_text="lead: the click made for it")
    event_id = serializers.IntegerField()
    message = serializers.CharField()
    transaction_id = serializers.CharField(required=False, help_text="sale")
    amount_cents = serializers.IntegerField(required=False, help_text="sale")
    attributed = serializers.BooleanField(required=False, help_text="sale")
    click_id = AbsentOrNullCharField(allow_null=True, required=False)
    customer_key = serializers.CharField(required=False, help_text="lead")


TestEventResultSerializer = output_serializer("TestEventResultSerializer", {"data": TestEventSerializer()})


class TestEventArrivalsSerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    last_at = serializers.DateTimeField(allow_null=True)
    last_event_id = serializers.IntegerField(allow_null=True)


class TestEventsByTypeSerializer(serializers.Serializer[Any]):
    click = TestEventArrivalsSerializer()
    lead = TestEventArrivalsSerializer()
    sale = TestEventArrivalsSerializer()


class CheckTestEventsSerializer(serializers.Serializer[Any]):
    program_id = serializers.IntegerField()
    since = serializers.DateTimeField()
    checked_at = serializers.DateTimeField()
    events = TestEventsByTypeSerializer()
    received = serializers.ListField(child=serializers.CharField())
    missing = serializers.ListField(child=serializers.CharField())


# The test-events check's body (tracking.selectors.status.tracking_test_events_get under "data").
CheckTestEventsResultSerializer = output_serializer(
    "CheckTestEventsResultSerializer", {"data": CheckTestEventsSerializer()}
)
