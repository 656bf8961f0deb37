"""What the events route reads (its query) and answers (a serializer per event type, which both renders the items
and describes them in the OpenAPI document)."""

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from core.api.fields import AnyField, IsoDateTimeField, spec_messages
from core.api.query import InstantField, query_time_bounds
from fraud.rules import Traffic
from tracking.services.tracker import UTM_FIELDS, utm_params_of

from ... import messages
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer

EVENT_TYPES = ("click", "lead", "sale")


# --- input ----------------------------------------------------------------------------------------------------------


class EventsQuerySerializer(PageQuerySerializer):
    type = serializers.ChoiceField(
        choices=EVENT_TYPES,
        error_messages=spec_messages(messages.EVENT_TYPE_INVALID),
        help_text="Which events: click, lead or sale",
    )
    program_id = id_filter(
        messages.EVENT_PROGRAM_ID_INVALID, "Only this program's events (404 if the key may not see it)"
    )
    partner_id = id_filter(messages.EVENT_PARTNER_ID_INVALID, "Only the events attributed to this partner")
    since = InstantField(
        message=messages.EVENT_SINCE_INVALID,
        required=False,
        help_text="Events at or after this time (a date: from its start, UTC); the event's own time",
    )
    until = InstantField(
        message=messages.EVENT_UNTIL_INVALID,
        required=False,
        help_text="Events at or before this time (a date: through its end, UTC); the event's own time",
    )
    test = serializers.ChoiceField(
        choices=("true", "false"),
        required=False,
        error_messages=spec_messages(messages.EVENT_TEST_INVALID),
        help_text="true: test-mode events only; false (default): live events only",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The same bounds as the dashboard's events list: a date as `until` covers its whole day.
        attrs["bounds"] = query_time_bounds(attrs, "since", "until", reversed_message=messages.EVENT_RANGE_INVALID)
        attrs["is_test"] = attrs.get("test") == "true"
        return attrs


# --- output ---------------------------------------------------------------------------------------------------------


class UtmParamField(serializers.CharField):
    """One utm_* parameter of the click's landing page (tracking.services.tracker.utm_params_of)."""

    def __init__(self, name: str) -> None:
        self.utm_name = name
        super().__init__(source="page_url", help_text="Read from page_url; empty if absent")

    def to_representation(self, value: str) -> str:
        return utm_params_of(value)[self.utm_name]


class EventTypeField(serializers.ChoiceField):
    """The item's type: the same for every item a serializer renders."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type
        super().__init__(choices=[event_type], source="*")

    def to_representation(self, value: Any) -> str:
        return self.event_type


def _partner_id() -> serializers.IntegerField:
    return serializers.IntegerField(allow_null=True, help_text="The attributed partner; null if none")


def _timestamp(source: str) -> IsoDateTimeField:
    return IsoDateTimeField(source=source, help_text="The event's own time (what since/until filter on)")


def _created_at() -> IsoDateTimeField:
    return IsoDateTimeField(help_text="When the service recorded it")


# A click, with its link (select_related); the utm_* fields stand after referrer_url.
class AgentClickEventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    type = EventTypeField("click")
    program_id = serializers.IntegerField()
    partner_id = _partner_id()
    link = serializers.CharField(source="link.short_link", allow_null=True, help_text="The referral link's short code")
    click_id = serializers.CharField()
    timestamp = _timestamp("click_timestamp")
    page_url = serializers.CharField(help_text="The landing page")
    referrer_url = serializers.CharField()
    geo_country = serializers.CharField(help_text="ISO 3166 alpha-2; empty if unknown")
    device_type = serializers.CharField()
    traffic = serializers.ChoiceField(
        choices=Traffic.choices,
        help_text="empty: counted; duplicate, bot or prefetch: recorded by the fraud rules, not counted",
    )
    flags = serializers.ListField(
        child=serializers.CharField(), help_text='The click rules that flagged it (["paid_ads"]); empty if none'
    )
    is_test = serializers.BooleanField()
    created_at = _created_at()

    def get_fields(self) -> dict[str, AnyField]:
        fields: dict[str, AnyField] = {}
        for name, field in super().get_fields().items():
            fields[name] = field
            if name == "referrer_url":
                fields.update({utm: UtmParamField(utm) for utm in UTM_FIELDS})
        return fields


class AgentLeadEventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    type = EventTypeField("lead")
    program_id = serializers.IntegerField()
    partner_id = _partner_id()
    click_id = serializers.CharField()
    customer_key = serializers.CharField()
    email = serializers.CharField(help_text="As the lead call sent it; may be empty")
    timestamp = _timestamp("lead_timestamp")
    provisional = serializers.BooleanField(help_text="A browser lead still waiting for the server's confirmation")
    settled_at = IsoDateTimeField(allow_null=True)
    is_test = serializers.BooleanField()
    created_at = _created_at()


class AgentSaleCommissionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    status = serializers.CharField()


# A sale, with its commission if any (select_related, which also records its absence).
class AgentSaleEventSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    type = EventTypeField("sale")
    program_id = serializers.IntegerField()
    partner_id = _partner_id()
    click_id = serializers.CharField(help_text="Empty when the sale came without one")
    transaction_id = serializers.CharField(
        source="processor_event_id", allow_null=True, help_text="The caller's transaction id"
    )
    amount_cents = serializers.IntegerField()
    currency = serializers.CharField()
    sale_type = serializers.ChoiceField(choices=["payment", "subscription"])
    payment_status = serializers.CharField()
    is_recurring = serializers.BooleanField()
    attributed = serializers.BooleanField(help_text="Whether the sale was credited to a partner")
    refunded_cents = serializers.IntegerField(
        source="commission.sale_refunded_cents",
        allow_null=True,
        help_text="Refunded so far (recorded on its commission); null without a commission",
    )
    timestamp = _timestamp("sale_date")
    commission = AgentSaleCommissionSerializer(allow_null=True)
    is_test = serializers.BooleanField()
    created_at = _created_at()


# The body of a page of each event type.
EVENT_PAGES: dict[str, type[serializers.Serializer[Any]]] = {
    "click": page_serializer("AgentClickEventList", AgentClickEventSerializer),
    "lead": page_serializer("AgentLeadEventList", AgentLeadEventSerializer),
    "sale": page_serializer("AgentSaleEventList", AgentSaleEventSerializer),
}
# What the OpenAPI document says of them: one list whose items are told apart by `type`.
AgentEventListSerializer = page_serializer(
    "AgentEventList",
    PolymorphicProxySerializer(
        component_name="AgentEvent",
        serializers={
            "click": AgentClickEventSerializer,
            "lead": AgentLeadEventSerializer,
            "sale": AgentSaleEventSerializer,
        },
        resource_type_field_name="type",
        many=True,
    ),
)
