"""Agent routes for a program's partner groups (groups:read / groups:write): the groups with their terms and
customer discount, each group's tier rules and bonuses, moving a partner to a group and the partner's group
changes, and the program's coupon codes.

Every route names a program the key may see (404 otherwise), and every object it names is looked up within that
program: a group, rule, bonus, partner or code of another program or workspace is 404, never revealed. Each write
goes through AgentWriteApi.write (its audit entry in the same transaction, Idempotency-Key honoured) with the
action names agent_api.audit uses for the same changes made on the dashboard. What the groups services refuse is a
400 invalid_request with the service's message (details.reason: its own code) or its 409 with its code."""

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError
from groups import stripe_codes
from groups.models import Bonus, PartnerGroup, TierRule
from groups.rules import (
    bonus_active_set,
    bonus_create,
    bonus_delete,
    tier_rule_active_set,
    tier_rule_create,
    tier_rule_delete,
)
from groups.selectors import enrolment_group
from groups.services import Move, group_create, group_delete, group_snapshot, group_update, partner_move
from groups.snapshots import code_snapshot, enrolment_snapshot, row_snapshot
from programs.models import Partner, Program

from ... import messages
from ...selectors import (
    agent_partner_get,
    agent_program_get,
    enrolment_of,
    group_bonus_get,
    group_bonuses,
    group_tier_rule_get,
    group_tier_rules,
    partner_group_changes,
    program_coupon_code_get,
    program_coupon_codes,
    program_group_get,
    program_group_rows,
)
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentApi, AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    ActiveUpdateSerializer,
    AgentBonusListSerializer,
    AgentBonusResultSerializer,
    AgentBonusSerializer,
    AgentCouponCodeListSerializer,
    AgentCouponCodeResultSerializer,
    AgentCouponCodeSerializer,
    AgentDeletedSerializer,
    AgentGroupChangeListSerializer,
    AgentGroupChangeSerializer,
    AgentGroupListSerializer,
    AgentGroupMoveResultSerializer,
    AgentGroupResultSerializer,
    AgentGroupSerializer,
    AgentTierRuleListSerializer,
    AgentTierRuleResultSerializer,
    AgentTierRuleSerializer,
    BonusCreateSerializer,
    CouponCodeCreateSerializer,
    CouponCodesQuerySerializer,
    GroupCreateSerializer,
    GroupUpdateSerializer,
    MoveSerializer,
    TierRuleCreateSerializer,
    group_fields_check,
)

READ, WRITE = "groups:read", "groups:write"
PROGRAM_ID = OpenApiParameter("program_id", int, OpenApiParameter.PATH, description="Program id")
GROUP_ID = OpenApiParameter("group_id", int, OpenApiParameter.PATH, description="Group id (of the program)")
RULE_ID = OpenApiParameter("rule_id", int, OpenApiParameter.PATH, description="Tier rule id (of the group)")
BONUS_ID = OpenApiParameter("bonus_id", int, OpenApiParameter.PATH, description="Bonus id (of the group)")
PARTNER_ID = OpenApiParameter("partner_id", int, OpenApiParameter.PATH, description="Partner id")
CODE_ID = OpenApiParameter("code_id", int, OpenApiParameter.PATH, description="Coupon code id (of the program)")
TIER_RULE_FIELDS = ("group_id", "target_id", "direction", "metric", "period", "threshold", "is_active")
BONUS_FIELDS = ("group_id", "name", "metric", "period", "threshold", "amount_cents", "currency", "is_active")


def _conflict(description: str) -> OpenApiResponse:
    return OpenApiResponse(
        PLATFORM_ERROR,
        description=f"{description}; idempotency_conflict: the Idempotency-Key was used with another body",
    )


T = TypeVar("T")


def _service(call: Callable[[], T]) -> T:
    """Runs a groups service: its 400 becomes invalid_request with its message (details.reason: its own code);
    its 409 (group_name_taken, group_not_empty, coupon_code_taken) and Stripe's 502 pass as they are."""
    try:
        return call()
    except BadRequestError as refusal:
        raise BadRequestError(
            refusal.message, code=messages.CODE_BAD_REQUEST, details={"reason": refusal.code} if refusal.code else None
        ) from None


def _group_data(group: PartnerGroup) -> dict[str, Any]:
    return AgentGroupSerializer(group).data


def _group_audit(group: PartnerGroup) -> dict[str, Any]:
    return {"program_id": group.program_id, **group_snapshot(group)}


class _ProgramScoped(AgentApi):
    @property
    def actor(self) -> str:
        """How the agent is named where the change is recorded (GroupChange.actor), as other agent writes are."""
        return f"agent key {self.agent_key.masked}"

    def program(self, program_id: str) -> Program:
        return agent_program_get(self.agent_key, program_id)

    def group(self, program_id: str, group_id: str) -> PartnerGroup:
        return program_group_get(self.program(program_id), group_id)


# --- groups ---------------------------------------------------------------------------------------------------------


@list_schema(
    operation_id="agent_program_groups_list",
    summary="A program's partner groups, newest first, each with its commission terms and customer discount",
    description="Every program has a default group (is_default), made on first read; its commission terms are the "
    "program's settings. A partner belongs to one group per program (the default one unless moved).",
    path_parameters=[PROGRAM_ID],
    error_statuses=(400, 404),
)
class AgentGroupsApi(AgentListApi, AgentWriteApi, _ProgramScoped):
    required_scopes = {"GET": READ, "POST": WRITE}
    selector = staticmethod(program_group_rows)
    output_serializer = AgentGroupListSerializer

    def owner(self, **path: str) -> Program:
        return self.program(path["program_id"])

    @extend_schema(
        operation_id="agent_program_groups_create",
        summary="Create a group in a program: its commission terms, customer discount and application page",
        parameters=[PROGRAM_ID],
        request=GroupCreateSerializer,
        responses={
            201: AgentGroupResultSerializer,
            **s.errors(400, 404),
            409: _conflict("group_name_taken: the program has a group of this name"),
        },
    )
    def post(self, request: Request, program_id: str) -> Response:
        program = self.program(program_id)
        body = body_of(GroupCreateSerializer, request)
        group_fields_check(body, None)

        def perform() -> AgentWrite:
            group = _service(lambda: group_create(program=program, **body))
            after = _group_data(group)
            return AgentWrite(201, {"data": after}, "group.create", "group", group.pk, None, _group_audit(group))

        return self.write(request, perform)


class AgentGroupApi(AgentWriteApi, _ProgramScoped):
    required_scopes = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(
        summary="One group of a program",
        parameters=[PROGRAM_ID, GROUP_ID],
        responses={200: AgentGroupResultSerializer, **s.errors(404)},
    )
    def get(self, request: Request, program_id: str, group_id: str) -> Response:
        return Response(AgentGroupResultSerializer({"data": self.group(program_id, group_id)}).data)

    @extend_schema(
        summary="Change a group's settings (only those sent)",
        description="Commissions already earned keep the terms they were computed under; the new terms apply to "
        "commissions earned from now on. The default group's commission terms (commission_type, commission_rate, "
        "duration_months, hold_days) are the program's settings: sending them for it is 400.",
        parameters=[PROGRAM_ID, GROUP_ID],
        request=GroupUpdateSerializer,
        responses={
            200: AgentGroupResultSerializer,
            **s.errors(400, 404),
            409: _conflict("group_name_taken: the program has a group of this name"),
        },
    )
    def patch(self, request: Request, program_id: str, group_id: str) -> Response:
        group = self.group(program_id, group_id)
        changes = body_of(GroupUpdateSerializer, request)
        if not group.is_default:
            group_fields_check(changes, group)

        def perform() -> AgentWrite:
            before = _group_audit(group)
            updated = _service(lambda: group_update(group=group, **changes))
            after = _group_audit(updated)
            return AgentWrite(200, {"data": _group_data(updated)}, "group.update", "group", group.pk, before, after)

        return self.write(request, perform)

    @extend_schema(
        summary="Delete an empty group (not the default one)",
        description="Its tier rules and bonuses go with it; its commissions keep their terms. A group with partners "
        "is 409 group_not_empty: move them first.",
        parameters=[PROGRAM_ID, GROUP_ID],
        request=None,
        responses={
            200: AgentDeletedSerializer,
            **s.errors(400, 404),
            409: _conflict("group_not_empty: partners are in the group"),
        },
    )
    def delete(self, request: Request, program_id: str, group_id: str) -> Response:
        group = self.group(program_id, group_id)

        def perform() -> AgentWrite:
            before = _group_audit(group)
            pk = group.pk
            _service(lambda: group_delete(group=group))
            body = AgentDeletedSerializer({"data": {"id": pk, "deleted": True}}).data
            return AgentWrite(200, body, "group.delete", "group", pk, before, None)

        return self.write(request, perform)


# --- tier rules and bonuses -----------------------------------------------------------------------------------------


@list_schema(
    operation_id="agent_group_tier_rules_list",
    summary="A group's tier rules, newest first: each moves its partners to another group at a threshold",
    description="Evaluated by a scheduled job: promote when the partner's figure in the current calendar month or "
    "quarter reaches the threshold, demote when it stayed below it in the last complete one. Each move is a group "
    "change naming the rule, at most once per partner and period.",
    path_parameters=[PROGRAM_ID, GROUP_ID],
    error_statuses=(400, 404),
)
class AgentTierRulesApi(AgentListApi, AgentWriteApi, _ProgramScoped):
    required_scopes = {"GET": READ, "POST": WRITE}
    selector = staticmethod(group_tier_rules)
    output_serializer = AgentTierRuleListSerializer

    def owner(self, **path: str) -> PartnerGroup:
        return self.group(path["program_id"], path["group_id"])

    @extend_schema(
        operation_id="agent_group_tier_rules_create",
        summary="Add a tier rule to a group",
        parameters=[PROGRAM_ID, GROUP_ID],
        request=TierRuleCreateSerializer,
        responses={201: AgentTierRuleResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request, program_id: str, group_id: str) -> Response:
        group = self.group(program_id, group_id)
        body = body_of(TierRuleCreateSerializer, request)
        target = PartnerGroup.objects.filter(program_id=group.program_id, pk=body.pop("target_group_id")).first()
        if target is None or target.pk == group.pk:
            raise BadRequestError(messages.TIER_TARGET_INVALID, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            rule = _service(lambda: tier_rule_create(group=group, target=target, **body))
            after = AgentTierRuleSerializer(rule).data
            audit = row_snapshot(rule, TIER_RULE_FIELDS)
            return AgentWrite(201, {"data": after}, "tier_rule.create", "tier_rule", rule.pk, None, audit)

        return self.write(request, perform)


class AgentTierRuleApi(AgentWriteApi, _ProgramScoped):
    required_scopes = {"PATCH": WRITE, "DELETE": WRITE}

    def rule(self, program_id: str, group_id: str, rule_id: str) -> TierRule:
        return group_tier_rule_get(self.group(program_id, group_id), rule_id)

    @extend_schema(
        summary="Turn a tier rule off or on (is_active)",
        parameters=[PROGRAM_ID, GROUP_ID, RULE_ID],
        request=ActiveUpdateSerializer,
        responses={200: AgentTierRuleResultSerializer, **s.errors(400, 404, 409)},
    )
    def patch(self, request: Request, program_id: str, group_id: str, rule_id: str) -> Response:
        rule = self.rule(program_id, group_id, rule_id)
        changes = body_of(ActiveUpdateSerializer, request)

        def perform() -> AgentWrite:
            before = row_snapshot(rule, TIER_RULE_FIELDS)
            # The beat job reads the flag on its next run: nothing else changes.
            tier_rule_active_set(rule=rule, is_active=changes["is_active"])
            after = row_snapshot(rule, TIER_RULE_FIELDS)
            body = {"data": AgentTierRuleSerializer(rule).data}
            return AgentWrite(200, body, "tier_rule.update", "tier_rule", rule.pk, before, after)

        return self.write(request, perform)

    @extend_schema(
        summary="Delete a tier rule (the group changes it made stay, without their rule)",
        parameters=[PROGRAM_ID, GROUP_ID, RULE_ID],
        request=None,
        responses={200: AgentDeletedSerializer, **s.errors(404, 409)},
    )
    def delete(self, request: Request, program_id: str, group_id: str, rule_id: str) -> Response:
        rule = self.rule(program_id, group_id, rule_id)

        def perform() -> AgentWrite:
            before, pk = row_snapshot(rule, TIER_RULE_FIELDS), rule.pk
            tier_rule_delete(rule=rule)
            body = AgentDeletedSerializer({"data": {"id": pk, "deleted": True}}).data
            return AgentWrite(200, body, "tier_rule.delete", "tier_rule", pk, before, None)

        return self.write(request, perform)


@list_schema(
    operation_id="agent_group_bonuses_list",
    summary="A group's bonuses, newest first: a one-off payment when a partner reaches a milestone",
    description="Paid as a commission of kind bonus (same hold, approval, ledger and payout rules), at most once "
    "per partner and period.",
    path_parameters=[PROGRAM_ID, GROUP_ID],
    error_statuses=(400, 404),
)
class AgentBonusesApi(AgentListApi, AgentWriteApi, _ProgramScoped):
    required_scopes = {"GET": READ, "POST": WRITE}
    selector = staticmethod(group_bonuses)
    output_serializer = AgentBonusListSerializer

    def owner(self, **path: str) -> PartnerGroup:
        return self.group(path["program_id"], path["group_id"])

    @extend_schema(
        operation_id="agent_group_bonuses_create",
        summary="Add a bonus to a group",
        parameters=[PROGRAM_ID, GROUP_ID],
        request=BonusCreateSerializer,
        responses={201: AgentBonusResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request, program_id: str, group_id: str) -> Response:
        group = self.group(program_id, group_id)
        body = body_of(BonusCreateSerializer, request)
        body["name"] = body["name"].strip()
        if not body["name"]:
            raise BadRequestError(messages.BONUS_NAME_INVALID, code=messages.CODE_BAD_REQUEST)

        def perform() -> AgentWrite:
            bonus = _service(lambda: bonus_create(group=group, **body))
            after = AgentBonusSerializer(bonus).data
            audit = row_snapshot(bonus, BONUS_FIELDS)
            return AgentWrite(201, {"data": after}, "bonus.create", "bonus", bonus.pk, None, audit)

        return self.write(request, perform)


class AgentBonusApi(AgentWriteApi, _ProgramScoped):
    required_scopes = {"PATCH": WRITE, "DELETE": WRITE}

    def bonus(self, program_id: str, group_id: str, bonus_id: str) -> Bonus:
        return group_bonus_get(self.group(program_id, group_id), bonus_id)

    @extend_schema(
        summary="Turn a bonus off or on (is_active); a bonus already paid is stopped this way",
        parameters=[PROGRAM_ID, GROUP_ID, BONUS_ID],
        request=ActiveUpdateSerializer,
        responses={200: AgentBonusResultSerializer, **s.errors(400, 404, 409)},
    )
    def patch(self, request: Request, program_id: str, group_id: str, bonus_id: str) -> Response:
        bonus = self.bonus(program_id, group_id, bonus_id)
        changes = body_of(ActiveUpdateSerializer, request)

        def perform() -> AgentWrite:
            before = row_snapshot(bonus, BONUS_FIELDS)
            bonus_active_set(bonus=bonus, is_active=changes["is_active"])
            after = row_snapshot(bonus, BONUS_FIELDS)
            return AgentWrite(
                200, {"data": AgentBonusSerializer(bonus).data}, "bonus.update", "bonus", bonus.pk, before, after
            )

        return self.write(request, perform)

    @extend_schema(
        summary="Delete a bonus never paid",
        description="A bonus paid at least once stays with its awards (409 bonus_paid): turn it off with PATCH "
        '{"is_active": false}.',
        parameters=[PROGRAM_ID, GROUP_ID, BONUS_ID],
        request=None,
        responses={
            200: AgentDeletedSerializer,
            **s.errors(404),
            409: _conflict("bonus_paid: the bonus has been paid; deactivate it instead"),
        },
    )
    def delete(self, request: Request, program_id: str, group_id: str, bonus_id: str) -> Response:
        bonus = self.bonus(program_id, group_id, bonus_id)

        def perform() -> AgentWrite:
            # Locked, so an award being written now either lands first (and is counted) or waits for the delete.
            locked = Bonus.objects.select_for_update().get(pk=bonus.pk)
            paid = locked.awards.count()
            if paid:
                raise ConflictError(
                    messages.BONUS_PAID.format(count=paid), code=messages.CODE_BONUS_PAID, details={"awards": paid}
                )
            before, pk = row_snapshot(locked, BONUS_FIELDS), locked.pk
            bonus_delete(bonus=locked)  # 409 bonus_paid too if an award committed since the count
            body = AgentDeletedSerializer({"data": {"id": pk, "deleted": True}}).data
            return AgentWrite(200, body, "bonus.delete", "bonus", pk, before, None)

        return self.write(request, perform)


# --- a partner's group ----------------------------------------------------------------------------------------------


class _PartnerInProgram(_ProgramScoped):
    def enrolled(self, program_id: str, partner_id: str) -> tuple[Program, Partner]:
        """The program and the partner (both 404 when the key may not see them)."""
        program = self.program(program_id)
        return program, agent_partner_get(self.agent_key, partner_id)


class AgentPartnerGroupApi(_PartnerInProgram):
    required_scopes = {"GET": READ}

    @extend_schema(
        summary="The group a partner is in, in a program",
        parameters=[PROGRAM_ID, PARTNER_ID],
        responses={200: AgentGroupResultSerializer, **s.errors(400, 404)},
    )
    def get(self, request: Request, program_id: str, partner_id: str) -> Response:
        program, partner = self.enrolled(program_id, partner_id)
        enrolment = enrolment_of(program, partner)
        if enrolment is None:
            raise BadRequestError(
                messages.GROUP_PARTNER_NOT_ENROLLED.format(partner_id=partner.pk), code=messages.CODE_BAD_REQUEST
            )
        group = enrolment_group(enrolment)
        group.program = program
        return Response(AgentGroupResultSerializer({"data": group}).data)


@list_schema(
    operation_id="agent_partner_group_changes_list",
    summary="A partner's group changes in a program, newest first: by whom (owner, tier rule, import, application) "
    "and, for a tier rule, the figure that triggered it",
    path_parameters=[PROGRAM_ID, PARTNER_ID],
    error_statuses=(400, 404),
)
class AgentPartnerGroupChangesApi(AgentListApi, AgentWriteApi, _PartnerInProgram):
    required_scopes = {"GET": READ, "POST": WRITE}
    selector = staticmethod(partner_group_changes)
    output_serializer = AgentGroupChangeListSerializer
    _program: Program  # set by owner(), read by filters()

    def owner(self, **path: str) -> Partner:
        program, partner = self.enrolled(path["program_id"], path["partner_id"])
        self._program = program
        return partner

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"program": self._program}

    @extend_schema(
        operation_id="agent_partner_group_changes_create",
        summary="Move a partner to another group of the program (201; 200 with moved false when it is there already)",
        description="The new group's terms apply to the commissions earned from now on; those already earned keep "
        "theirs. The change is recorded (reason owner, actor the agent key) and sent as the partner.group_changed "
        "webhook.",
        parameters=[PROGRAM_ID, PARTNER_ID],
        request=MoveSerializer,
        responses={200: AgentGroupMoveResultSerializer, 201: AgentGroupMoveResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request, program_id: str, partner_id: str) -> Response:
        program, partner = self.enrolled(program_id, partner_id)
        body = body_of(MoveSerializer, request)
        group = program_group_get(program, body["group_id"])
        actor = self.actor

        def perform() -> AgentWrite:
            enrolment = enrolment_of(program, partner)
            if enrolment is None:
                raise BadRequestError(
                    messages.GROUP_PARTNER_NOT_ENROLLED.format(partner_id=partner.pk), code=messages.CODE_BAD_REQUEST
                )
            before = enrolment_snapshot(enrolment, group_id=enrolment_group(enrolment).pk)
            with transaction.atomic():
                change = partner_move(enrolment=enrolment, group=group, move=Move(reason="owner", actor=actor))
            after = enrolment_snapshot(enrolment, group_id=group.pk)
            data = {
                "partner_id": partner.pk,
                "program_id": program.pk,
                "group_id": group.pk,
                "moved": change is not None,
                "change": AgentGroupChangeSerializer(change).data if change is not None else None,
            }
            status = 201 if change is not None else 200
            return AgentWrite(status, {"data": data}, "enrolment.move", "enrolment", enrolment.pk, before, after)

        return self.write(request, perform)


# --- coupon codes ---------------------------------------------------------------------------------------------------


@list_schema(
    operation_id="agent_program_coupon_codes_list",
    summary="A program's coupon codes, newest first; partner_id: one partner's codes",
    description="A sale carrying an active code (the sale API's coupon_code, a Stripe checkout's promotion code) is "
    "the code's partner's when no click or customer key attributes it.",
    path_parameters=[PROGRAM_ID],
    error_statuses=(400, 404),
)
class AgentCouponCodesApi(AgentListApi, AgentWriteApi, _ProgramScoped):
    required_scopes = {"GET": READ, "POST": WRITE}
    query_serializer = CouponCodesQuerySerializer
    selector = staticmethod(program_coupon_codes)
    output_serializer = AgentCouponCodeListSerializer

    def owner(self, **path: str) -> Program:
        return self.program(path["program_id"])

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {
            "partner_id": query.get("partner_id"),
            "active": query["active"] == "true" if "active" in query else None,
        }

    @extend_schema(
        operation_id="agent_program_coupon_codes_create",
        summary="Give a partner enrolled in the program a coupon code",
        description="With the program's Stripe account connected, a promotion code is made there for the coupon of "
        "the partner's group (the group needs a discount); otherwise the code is registered as it is (manual), for "
        "a code made in another processor. Codes are unique per program, case-insensitive.",
        parameters=[PROGRAM_ID],
        request=CouponCodeCreateSerializer,
        responses={
            201: AgentCouponCodeResultSerializer,
            **s.errors(400, 404),
            409: _conflict("coupon_code_taken: another code of the program is spelled the same"),
            502: OpenApiResponse(PLATFORM_ERROR, description="stripe_unavailable: Stripe failed; nothing was made"),
        },
    )
    def post(self, request: Request, program_id: str) -> Response:
        program = self.program(program_id)
        body = body_of(CouponCodeCreateSerializer, request)
        partner = agent_partner_get(self.agent_key, body["partner_id"])

        def perform() -> AgentWrite:
            code = _service(
                lambda: stripe_codes.partner_code_create(program=program, partner=partner, code=body["code"])
            )
            after = AgentCouponCodeSerializer(code).data
            return AgentWrite(
                201, {"data": after}, "coupon_code.create", "coupon_code", code.pk, None, code_snapshot(code)
            )

        return self.write(request, perform)


class AgentCouponCodeDeactivateApi(AgentWriteApi, _ProgramScoped):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        summary="Deactivate a coupon code: sales carrying it are no longer attributed by it, and a Stripe promotion "
        "code is turned off on the connected account (200 when it already was)",
        parameters=[PROGRAM_ID, CODE_ID],
        request=None,
        responses={
            200: AgentCouponCodeResultSerializer,
            **s.errors(404, 409),
            502: OpenApiResponse(
                PLATFORM_ERROR,
                description="stripe_unavailable: Stripe failed turning its promotion code off",
            ),
        },
    )
    def post(self, request: Request, program_id: str, code_id: str) -> Response:
        code = program_coupon_code_get(self.program(program_id), code_id)

        def perform() -> AgentWrite:
            before = code_snapshot(code)
            _service(lambda: stripe_codes.partner_code_deactivate(code=code))
            after = code_snapshot(code)
            body = {"data": AgentCouponCodeSerializer(code).data}
            return AgentWrite(200, body, "coupon_code.deactivate", "coupon_code", code.pk, before, after)

        return self.write(request, perform)


PROGRAM = "api/agent/v1/programs/<id:program_id>"
GROUP = f"{PROGRAM}/groups/<id:group_id>"
urlpatterns = [
    path(f"{PROGRAM}/groups", AgentGroupsApi.as_view(), name="agent-program-groups"),
    path(GROUP, AgentGroupApi.as_view(), name="agent-program-group"),
    path(f"{GROUP}/tier-rules", AgentTierRulesApi.as_view(), name="agent-group-tier-rules"),
    path(f"{GROUP}/tier-rules/<id:rule_id>", AgentTierRuleApi.as_view(), name="agent-group-tier-rule"),
    path(f"{GROUP}/bonuses", AgentBonusesApi.as_view(), name="agent-group-bonuses"),
    path(f"{GROUP}/bonuses/<id:bonus_id>", AgentBonusApi.as_view(), name="agent-group-bonus"),
    path(f"{PROGRAM}/partners/<id:partner_id>/group", AgentPartnerGroupApi.as_view(), name="agent-partner-group"),
    path(
        f"{PROGRAM}/partners/<id:partner_id>/group-changes",
        AgentPartnerGroupChangesApi.as_view(),
        name="agent-partner-group-changes",
    ),
    path(f"{PROGRAM}/coupon-codes", AgentCouponCodesApi.as_view(), name="agent-program-coupon-codes"),
    path(
        f"{PROGRAM}/coupon-codes/<id:code_id>/deactivate",
        AgentCouponCodeDeactivateApi.as_view(),
        name="agent-program-coupon-code-deactivate",
    ),
]
