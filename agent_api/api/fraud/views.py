"""Agent routes for a program's fraud rules and what they found: the rules with their settings (programs:read),
changing or resetting one (programs:write; idempotent and audited), and the clicks the rules marked (events:read).

The rules and their bounds are fraud's: fraud.config.rule_update refuses what a rule does not take (a threshold
on a rule without one, a value out of range) with a core.messages constant, a 400 here. A setting takes effect for
new clicks and sales; nothing recorded is judged again."""

from collections.abc import Callable
from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.errors import NotFoundError
from fraud.config import RuleConfig, program_rules_read, rule_reset, rule_update
from fraud.rules import SPECS, Rule
from programs.models import Program
from tracking.selectors.clicks import marked_as, marked_clicks_before

from ... import messages
from ...selectors import agent_flagged_clicks, agent_program_get
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentApi, AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    AgentFlaggedClickListSerializer,
    AgentFraudRuleListSerializer,
    AgentFraudRuleResultSerializer,
    AgentFraudRuleSerializer,
    FlaggedClicksQuerySerializer,
    FraudRuleUpdateSerializer,
)

PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")
RULE = OpenApiParameter("rule", str, OpenApiParameter.PATH, enum=Rule.values, description="The rule's name")
RULES = ", ".join(Rule.values)


def _rule_of(rule: str) -> str:
    if rule not in SPECS:
        raise NotFoundError(
            messages.FRAUD_RULE_NOT_FOUND.format(rule=rule[:64], known=RULES), code=messages.CODE_NOT_FOUND
        )
    return rule


class AgentFraudRulesApi(AgentApi):
    required_scopes = {"GET": "programs:read"}

    @extend_schema(
        operation_id="agent_program_fraud_rules_list",
        summary="A program's fraud rules: each one's settings, whether they are its own or the defaults, and what it "
        "looks for",
        parameters=[PROGRAM_ID],
        responses={200: AgentFraudRuleListSerializer, **s.errors(404)},
    )
    def get(self, request: Request, program_id: str) -> Response:
        program = agent_program_get(self.agent_key, program_id)
        rules = program_rules_read(program.pk).rules
        return Response(AgentFraudRuleListSerializer({"data": rules.values()}).data)


class AgentFraudRuleApi(AgentWriteApi):
    required_scopes = {"PATCH": "programs:write", "DELETE": "programs:write"}

    def _write(
        self, request: Request, program: Program, rule: str, action: str, change: Callable[[], RuleConfig]
    ) -> Response:
        def perform() -> AgentWrite:
            before = AgentFraudRuleSerializer(program_rules_read(program.pk).get(rule)).data
            after = AgentFraudRuleSerializer(change()).data
            return AgentWrite(200, {"data": after}, action, "fraud_rule", f"{program.pk}:{rule}", before, after)

        return self.write(request, perform)

    @extend_schema(
        summary="Change one of a program's fraud rules: enabled, action, threshold or window_minutes",
        description="Only the settings sent change. threshold and window_minutes are refused for a rule that has "
        "none. Takes effect for new clicks and sales within seconds; nothing recorded is judged again.",
        parameters=[PROGRAM_ID, RULE],
        request=FraudRuleUpdateSerializer,
        responses={200: AgentFraudRuleResultSerializer, **s.errors(400, 404, 409)},
    )
    def patch(self, request: Request, program_id: str, rule: str) -> Response:
        program = agent_program_get(self.agent_key, program_id)
        rule = _rule_of(rule)
        changes = body_of(FraudRuleUpdateSerializer, request)
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
        responses={200: AgentFraudRuleResultSerializer, **s.errors(404, 409)},
    )
    def delete(self, request: Request, program_id: str, rule: str) -> Response:
        program = agent_program_get(self.agent_key, program_id)
        rule = _rule_of(rule)
        return self._write(
            request, program, rule, "fraud_rule.reset", lambda: rule_reset(program_id=program.pk, rule=rule)
        )


@list_schema(
    operation_id="agent_program_flagged_clicks_list",
    summary="A program's clicks the fraud rules marked, newest first: duplicates, bots, prefetches, paid-ad clicks",
    description="Never the IP or the full visitor hash. Live and test clicks alike (is_test says which).",
    path_parameters=[PROGRAM_ID],
    error_statuses=(400, 404),
)
class AgentFlaggedClicksApi(AgentListApi):
    required_scopes = {"GET": "events:read"}
    query_serializer = FlaggedClicksQuerySerializer
    selector = staticmethod(agent_flagged_clicks)
    output_serializer = AgentFlaggedClickListSerializer
    # The rows keep the index's own order (tracking.selectors.clicks.marked_clicks).
    older_than = staticmethod(marked_clicks_before)

    def owner(self, **path: str) -> Program:
        return agent_program_get(self.agent_key, path["program_id"])

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {
            "marked": marked_as(query["kind"]) if "kind" in query else None,
            "partner_id": query.get("partner_id"),
        }


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
