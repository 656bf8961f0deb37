"""Agent routes for a program's fraud rules and what they found: the rules with their settings (programs:read),
changing or resetting one (programs:write; idempotent and audited), and the clicks the rules marked (events:read).

The rules and their bounds are fraud's: fraud.config.rule_update refuses what a rule does not take (a threshold
on a rule without one, a value out of range) with a core.messages constant, a 400 here. A setting takes effect for
new clicks and sales; nothing recorded is judged again."""

from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core import messages as core_messages
from core.api.fields import StrictBooleanField, StrictIntegerField
from core.api.query import QueryIntegerField, iso
from core.errors import BadRequestError, NotFoundError
from core.ids import MAX_BIGINT
from fraud.config import RuleConfig, program_rules_read, rule_reset, rule_update
from fraud.rules import SPECS, THRESHOLD_RANGE, WINDOW_RANGE, Action, Rule, Traffic
from programs.models import Program
from tracking.models import ClickEvent
from tracking.selectors.clicks import MARKED_KINDS, VISITOR_SHOWN, marked_as, marked_clicks_before

from .. import messages
from ..selectors import agent_program_get, program_flagged_clicks
from ..services import AgentWrite
from . import serializers as s
from .base import AgentApi, AgentWriteApi, query_of
from .pagination import PageQuerySerializer, page_of

PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")
RULE = OpenApiParameter("rule", str, OpenApiParameter.PATH, enum=Rule.values, description="The rule's name")
RULES = ", ".join(Rule.values)
# What a flagged click may be: not counted (a traffic kind) or counted but flagged by a click rule.
FLAGGED_KINDS = tuple(MARKED_KINDS)


def rule_out(config: RuleConfig) -> dict[str, Any]:
    return {
        "rule": config.rule,
        "enabled": config.enabled,
        "action": config.action,
        "threshold": config.threshold,
        "window_minutes": config.window_minutes,
        "customised": config.customised,
        "description": SPECS[config.rule].description,
    }


def flagged_click_out(click: ClickEvent) -> dict[str, Any]:
    return {
        "id": click.pk,
        "click_id": click.click_id,
        "link": click.link.short_link if click.link else None,
        "partner_id": click.partner_id,
        "traffic": click.traffic,
        "flags": list(click.flags),
        "visitor": click.visitor_hash[:VISITOR_SHOWN],
        "device_type": click.device_type,
        "browser_name": click.browser_name,
        "geo_country": click.geo_country,
        "is_test": click.is_test,
        "created_at": iso(click.created_at),
    }


def _rule_of(rule: str) -> str:
    if rule not in SPECS:
        raise NotFoundError(
            messages.FRAUD_RULE_NOT_FOUND.format(rule=rule[:64], known=RULES), code=messages.CODE_NOT_FOUND
        )
    return rule


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


class FraudRuleUpdateSerializer(serializers.Serializer):
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
    partner_id = QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PARTNER_ID_FILTER_INVALID,
        too_big=messages.PARTNER_ID_FILTER_INVALID,
        required=False,
        help_text="Only the clicks on this partner's links",
    )


def _body(request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise BadRequestError(messages.BODY_NOT_OBJECT, code=messages.CODE_BAD_REQUEST)
    serializer = FraudRuleUpdateSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- response shapes (OpenAPI) --------------------------------------------------------------------------------------

FRAUD_RULE = inline_serializer(
    "AgentFraudRule",
    fields={
        "rule": serializers.ChoiceField(choices=Rule.choices),
        "enabled": serializers.BooleanField(),
        "action": serializers.ChoiceField(choices=Action.choices, help_text="flag, or hold the commission too"),
        "threshold": serializers.IntegerField(
            allow_null=True, help_text="The count the rule fires above; null for a rule without one"
        ),
        "window_minutes": serializers.IntegerField(
            allow_null=True, help_text="The window it counts in; null for a rule without one"
        ),
        "customised": serializers.BooleanField(help_text="false: the rule runs on its defaults"),
        "description": serializers.CharField(help_text="What the rule looks for"),
    },
)
FRAUD_RULES_OK = inline_serializer("AgentFraudRuleList", fields={"data": serializers.ListField(child=FRAUD_RULE)})
FRAUD_RULE_OK = inline_serializer("AgentFraudRuleResult", fields={"data": FRAUD_RULE})
FLAGGED_CLICK = inline_serializer(
    "AgentFlaggedClick",
    fields={
        "id": serializers.IntegerField(),
        "click_id": serializers.CharField(),
        "link": serializers.CharField(allow_null=True, help_text="The referral link's short code"),
        "partner_id": serializers.IntegerField(allow_null=True),
        "traffic": serializers.ChoiceField(
            choices=Traffic.choices, help_text="empty: counted; duplicate, bot or prefetch: recorded, not counted"
        ),
        "flags": serializers.ListField(
            child=serializers.CharField(), help_text='The click rules that flagged it (["paid_ads"])'
        ),
        "visitor": serializers.CharField(
            help_text=f"The first {VISITOR_SHOWN} characters of the visitor's hash (of IP and user agent): the same "
            "value is the same visitor; empty if unknown"
        ),
        "device_type": serializers.CharField(),
        "browser_name": serializers.CharField(),
        "geo_country": serializers.CharField(help_text="ISO 3166 alpha-2; empty if unknown"),
        "is_test": serializers.BooleanField(),
        "created_at": serializers.DateTimeField(),
    },
)
FLAGGED_CLICKS_OK = inline_serializer(
    "AgentFlaggedClickList",
    fields={"data": serializers.ListField(child=FLAGGED_CLICK), "next_cursor": s.NEXT_CURSOR},
)


# --- routes ---------------------------------------------------------------------------------------------------------


class AgentFraudRulesApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        operation_id="agent_program_fraud_rules_list",
        summary="A program's fraud rules: each one's settings, whether they are its own or the defaults, and what it "
        "looks for",
        parameters=[PROGRAM_ID],
        responses={200: FRAUD_RULES_OK, **s.errors(404)},
    )
    def get(self, request, program_id: str):
        program = agent_program_get(self.agent_key, program_id)
        rules = program_rules_read(program.pk).rules
        return Response({"data": [rule_out(config) for config in rules.values()]})


class AgentFraudRuleApi(AgentWriteApi):
    required_scopes = {"PATCH": "programs:write", "DELETE": "programs:write"}

    def _write(self, request, program: Program, rule: str, action: str, change) -> Response:
        def perform() -> AgentWrite:
            before = rule_out(program_rules_read(program.pk).get(rule))
            after = rule_out(change())
            return AgentWrite(200, {"data": after}, action, "fraud_rule", f"{program.pk}:{rule}", before, after)

        return self.write(request, perform)

    @extend_schema(
        summary="Change one of a program's fraud rules: enabled, action, threshold or window_minutes",
        description="Only the settings sent change. threshold and window_minutes are refused for a rule that has "
        "none. Takes effect for new clicks and sales within seconds; nothing recorded is judged again.",
        parameters=[PROGRAM_ID, RULE],
        request=FraudRuleUpdateSerializer,
        responses={200: FRAUD_RULE_OK, **s.errors(400, 404, 409)},
    )
    def patch(self, request, program_id: str, rule: str):
        program = agent_program_get(self.agent_key, program_id)
        rule = _rule_of(rule)
        changes = _body(request)
        return self._write(
            request,
            program,
            rule,
            "fraud_rule.update",
            lambda: rule_update(program_id=program.pk, rule=rule, **changes),
        )

    @extend_schema(
        summary="Put one of a program's fraud rules back on its defaults",
        parameters=[PROGRAM_ID, RULE],
        request=None,
        responses={200: FRAUD_RULE_OK, **s.errors(404, 409)},
    )
    def delete(self, request, program_id: str, rule: str):
        program = agent_program_get(self.agent_key, program_id)
        rule = _rule_of(rule)
        return self._write(
            request, program, rule, "fraud_rule.reset", lambda: rule_reset(program_id=program.pk, rule=rule)
        )


class AgentFlaggedClicksApi(AgentApi):
    required_scopes = {"GET": "events:read"}

    @extend_schema(
        operation_id="agent_program_flagged_clicks_list",
        summary="A program's clicks the fraud rules marked, newest first: duplicates, bots, prefetches, paid-ad clicks",
        description="Never the IP or the full visitor hash. Live and test clicks alike (is_test says which).",
        parameters=[PROGRAM_ID, FlaggedClicksQuerySerializer],
        responses={200: FLAGGED_CLICKS_OK, **s.errors(400, 404)},
    )
    def get(self, request, program_id: str):
        program = agent_program_get(self.agent_key, program_id)
        query = query_of(FlaggedClicksQuerySerializer, request)
        clicks = program_flagged_clicks(program)
        if "kind" in query:
            clicks = clicks.filter(marked_as(query["kind"]))
        if "partner_id" in query:
            clicks = clicks.filter(partner_id=query["partner_id"])
        page, next_cursor = page_of(clicks, query=query, older_than=marked_clicks_before)
        return Response({"data": [flagged_click_out(click) for click in page], "next_cursor": next_cursor})


urlpatterns = [
    path(
        "api/agent/v1/programs/<id:program_id>/fraud-rules",
        AgentFraudRulesApi.as_view(),
        name="agent-program-fraud-rules",
    ),
    path(
        "api/agent/v1/programs/<id:program_id>/fraud-rules/<str:rule>",
        AgentFraudRuleApi.as_view(),
        name="agent-program-fraud-rule",
    ),
    path(
        "api/agent/v1/programs/<id:program_id>/flagged-clicks",
        AgentFlaggedClicksApi.as_view(),
        name="agent-program-flagged-clicks",
    ),
]
