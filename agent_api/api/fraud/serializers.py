"""What the fraud routes read (body and query serializers) and answer (output serializers, which both render the
bodies and describe them in the OpenAPI document)."""

from typing import Any

from rest_framework import serializers

from core import messages as core_messages
from core.api.fields import IsoDateTimeField, StrictBooleanField, StrictIntegerField
from fraud.config import RuleConfig
from fraud.rules import SPECS, THRESHOLD_RANGE, WINDOW_RANGE, Action, Rule, Traffic
from tracking.models import ClickEvent
from tracking.selectors.clicks import MARKED_KINDS, VISITOR_SHOWN

from ... import messages
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

# What a flagged click may be: not counted (a traffic kind) or counted but flagged by a click rule.
FLAGGED_KINDS = tuple(MARKED_KINDS)


# --- input ----------------------------------------------------------------------------------------------------------


def _number(field: str, low: int, high: int, range_message: str, help_text: str) -> StrictIntegerField:
    invalid = messages.FRAUD_RULE_NUMBER_INVALID.format(field=field)
    out_of_range = range_message.format(low=low, high=high)
    return StrictIntegerField(
        required=False,
        min_value=low,
        max_value=high,
        help_text=help_text,
        error_messages={
            "invalid": invalid,
            "null": invalid,
            "max_string_length": invalid,
            "min_value": out_of_range,
            "max_value": out_of_range,
        },
    )


class FraudRuleUpdateSerializer(serializers.Serializer[Any]):
    """Any of the rule's settings; those not sent stay as they are. Nothing else is accepted."""

    enabled = StrictBooleanField(
        required=False,
        help_text="Whether the rule runs",
        error_messages={key: messages.FRAUD_RULE_ENABLED_INVALID for key in ("invalid", "null")},
    )
    action = serializers.ChoiceField(
        choices=Action.choices,
        required=False,
        help_text="flag: mark what it finds; hold: also hold the commission of a sale it fires on until an owner "
        "releases or voids it",
        error_messages={key: core_messages.FRAUD_RULE_ACTION_INVALID for key in ("invalid_choice", "null")},
    )
    threshold = _number(
        "threshold",
        *THRESHOLD_RANGE,
        core_messages.FRAUD_RULE_THRESHOLD_RANGE,
        "Velocity rules: the rule fires on more than this many",
    )
    window_minutes = _number(
        "window_minutes",
        *WINDOW_RANGE,
        core_messages.FRAUD_RULE_WINDOW_RANGE,
        "Duplicate and velocity rules: the window counted back from the click or sale",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(messages.FRAUD_RULE_UNKNOWN_FIELDS.format(fields=", ".join(unknown)))
        if not attrs:
            raise serializers.ValidationError(messages.FRAUD_RULE_PATCH_EMPTY)
        return attrs


class FlaggedClicksQuerySerializer(PageQuerySerializer):
    kind = serializers.ChoiceField(
        choices=FLAGGED_KINDS,
        required=False,
        error_messages={"invalid_choice": messages.FLAGGED_KIND_INVALID.format(known=", ".join(FLAGGED_KINDS))},
        help_text="duplicate, bot or prefetch: clicks recorded as such (not counted); paid_ads: clicks that carried "
        "an ad network's click id. Without it, every marked click",
    )
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only the clicks on this partner's links")


# --- output ---------------------------------------------------------------------------------------------------------


# A rule's settings (fraud.config.RuleConfig) and what it looks for.
class AgentFraudRuleSerializer(serializers.Serializer[Any]):
    rule = serializers.ChoiceField(choices=Rule.choices)
    enabled = serializers.BooleanField()
    action = serializers.ChoiceField(choices=Action.choices, help_text="flag, or hold the commission too")
    threshold = serializers.IntegerField(
        allow_null=True, help_text="The count the rule fires above; null for a rule without one"
    )
    window_minutes = serializers.IntegerField(
        allow_null=True, help_text="The window it counts in; null for a rule without one"
    )
    customised = serializers.BooleanField(help_text="false: the rule runs on its defaults")
    description = serializers.SerializerMethodField(help_text="What the rule looks for")

    def get_description(self, config: RuleConfig) -> str:
        return SPECS[config.rule].description


# A marked click, with its link (select_related). Never the IP or the full visitor hash.
class AgentFlaggedClickSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    click_id = serializers.CharField()
    link = serializers.CharField(source="link.short_link", allow_null=True, help_text="The referral link's short code")
    partner_id = serializers.IntegerField(allow_null=True)
    traffic = serializers.ChoiceField(
        choices=Traffic.choices, help_text="empty: counted; duplicate, bot or prefetch: recorded, not counted"
    )
    flags = serializers.ListField(
        child=serializers.CharField(), help_text='The click rules that flagged it (["paid_ads"])'
    )
    visitor = serializers.SerializerMethodField(
        help_text=f"The first {VISITOR_SHOWN} characters of the visitor's hash (of IP and user agent): the same "
        "value is the same visitor; empty if unknown"
    )
    device_type = serializers.CharField()
    browser_name = serializers.CharField()
    geo_country = serializers.CharField(help_text="ISO 3166 alpha-2; empty if unknown")
    is_test = serializers.BooleanField()
    created_at = IsoDateTimeField()

    def get_visitor(self, click: ClickEvent) -> str:
        return click.visitor_hash[:VISITOR_SHOWN]


AgentFraudRuleListSerializer = result_serializer("AgentFraudRuleList", AgentFraudRuleSerializer(many=True))
AgentFraudRuleResultSerializer = result_serializer("AgentFraudRuleResult", AgentFraudRuleSerializer())
AgentFlaggedClickListSerializer = page_serializer("AgentFlaggedClickList", AgentFlaggedClickSerializer)
