"""Agent routes for commissions: /api/agent/v1/commissions[/:id] (list with filters, get with its refund history)
and the owner's actions on one: approve, void, hold, release (commissions:write; idempotent and audited).
What a commission pays is always read from commissions.selectors.commissions_with_money, never a stored counter."""

from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from commissions.approval import CommissionNotApprovable
from commissions.services import CommissionActionRefused, OwnerDecision, commission_decide
from core import messages as core_messages
from core.api.schema import PLATFORM_ERROR
from core.errors import ConflictError

from ... import messages
from ...selectors import agent_commission_detail_get, agent_commission_id_get, agent_commissions_list
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentApi, AgentListApi, AgentWriteApi, body_of, list_schema
from .serializers import (
    AgentCommissionActionResultSerializer,
    AgentCommissionListSerializer,
    AgentCommissionResultSerializer,
    AgentCommissionSerializer,
    CommissionHoldSerializer,
    CommissionReleaseSerializer,
    CommissionsQuerySerializer,
    CommissionVoidSerializer,
)

COMMISSION_ID = OpenApiParameter("commission_id", int, OpenApiParameter.PATH, description="Commission id")
STATE_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="commission_state: the commission's state does not allow this (the message says why); "
    "idempotency_conflict: the Idempotency-Key was used with another body",
)


@list_schema(
    operation_id="agent_commissions_list",
    summary="The commissions of the programs this key may see, newest first",
    description="Each commission with what it still pays (`payable_cents`) and what refunds clawed back "
    "(`clawed_back_cents`), computed from the commission, never from a running counter. Filters combine.",
    error_statuses=(400, 404),
)
class AgentCommissionsListApi(AgentListApi):
    required_scopes = {"GET": "commissions:read"}
    query_serializer = CommissionsQuerySerializer
    selector = staticmethod(agent_commissions_list)
    output_serializer = AgentCommissionListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {
            "program": self.program_filter(query),
            "partner_id": query.get("partner_id"),
            "status": query.get("status"),
            "held": query["held"] == "true" if "held" in query else None,
            "hold_rule": query.get("hold_rule"),
            "flagged": query.get("flagged"),
            "created_since": query.get("created_since"),
            "created_until": query.get("created_until"),
        }


class AgentCommissionGetApi(AgentApi):
    required_scopes = {"GET": "commissions:read"}

    @extend_schema(
        summary="One commission with its ledger entries, refund history and hold decisions",
        description="`ledger`: the commission's entries in the partner ledger, oldest first (its credit when "
        "approved, a clawback per refund after that). `refunds`: what the stored refund bookkeeping holds: the "
        "count, how much of the sale was refunded and the commission's share of it, the refund ids and id-less "
        "amounts applied, and one step per refund applied (its reason, whether it reversed the commission or hit "
        "one already paid out). `reviews`: every decision on its hold, oldest first (held by a rule or an owner, "
        "released, voided), with who decided and why.",
        parameters=[COMMISSION_ID],
        responses={200: AgentCommissionResultSerializer, **s.errors(404)},
    )
    def get(self, request: Request, commission_id: str) -> Response:
        detail = agent_commission_detail_get(self.agent_key, commission_id)
        return Response(AgentCommissionResultSerializer({"data": detail}).data)


class CommissionActionApi(AgentWriteApi):
    """POST /commissions/:id/<action>: commissions.services.commission_decide runs the decision under the
    commission's row lock and reads it before and after, so the audit entry's `before` is the state the action
    found."""

    required_scopes = {"POST": "commissions:write"}

    @property
    def actor(self) -> str:
        """Who decided, as the commission's review entries name it."""
        return f"agent key {self.agent_key.masked}"

    def act(self, request: Request, commission_id: str, decision: OwnerDecision, reason: str = "") -> Response:
        pk = agent_commission_id_get(self.agent_key, commission_id)

        def perform() -> AgentWrite:
            try:
                decided = commission_decide(commission_id=pk, decision=decision, actor=self.actor, reason=reason)
            except CommissionNotApprovable as refused:
                raise ConflictError(
                    core_messages.COMMISSION_APPROVE_NOT_PENDING.format(status=refused.args[0]),
                    code=messages.CODE_COMMISSION_STATE,
                ) from None
            except CommissionActionRefused as refused:
                raise ConflictError(str(refused), code=messages.CODE_COMMISSION_STATE) from None
            before = AgentCommissionSerializer(decided.before).data
            after = AgentCommissionSerializer(decided.after).data
            return AgentWrite(200, {"data": after}, f"commission.{decision}", "commission", pk, before, after)

        return self.write(request, perform)


class AgentCommissionApproveApi(CommissionActionApi):
    @extend_schema(
        summary="Approve a pending commission now, before its hold period ends: the partner is credited at once",
        description="Refused (409 commission_state) unless the commission is pending and not on hold (release it "
        "first).",
        parameters=[COMMISSION_ID],
        request=None,
        responses={200: AgentCommissionActionResultSerializer, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request: Request, commission_id: str) -> Response:
        return self.act(request, commission_id, "approve")


class AgentCommissionVoidApi(CommissionActionApi):
    @extend_schema(
        summary="Void a commission with a reason: it pays nothing; what it had credited is deducted",
        description="The commission is reversed whole. If the partner had been credited for it, what was not "
        "already clawed back is deducted from the ledger and open withdrawals shrink to fit the balance. A paid "
        "commission (refund its sale instead) or one already reversed is refused (409 commission_state).",
        parameters=[COMMISSION_ID],
        request=CommissionVoidSerializer,
        responses={200: AgentCommissionActionResultSerializer, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request: Request, commission_id: str) -> Response:
        reason = body_of(CommissionVoidSerializer, request)["reason"]
        return self.act(request, commission_id, "void", reason)


class AgentCommissionHoldApi(CommissionActionApi):
    @extend_schema(
        summary="Put a pending commission on hold: it is not approved, even when its hold period ends, until released",
        description="Only a pending commission can be held (409 commission_state otherwise). Holding a held "
        "commission again replaces its reason.",
        parameters=[COMMISSION_ID],
        request=CommissionHoldSerializer,
        responses={200: AgentCommissionActionResultSerializer, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request: Request, commission_id: str) -> Response:
        reason = body_of(CommissionHoldSerializer, request).get("reason") or ""
        return self.act(request, commission_id, "hold", reason)


class AgentCommissionReleaseApi(CommissionActionApi):
    @extend_schema(
        summary="Release a commission from hold: credited at once if its hold period has ended, else when it ends",
        description="A pending commission whose hold period has ended is approved and credited to the partner in "
        "the same request (`status` approved); one still in its hold period is approved by the hold job when it "
        "ends. Whether an owner or a fraud rule held it, the release is recorded in its `reviews` with the reason "
        "given. A commission that is not on hold is refused (409 commission_state).",
        parameters=[COMMISSION_ID],
        request=CommissionReleaseSerializer,
        responses={200: AgentCommissionActionResultSerializer, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request: Request, commission_id: str) -> Response:
        reason = body_of(CommissionReleaseSerializer, request).get("reason") or ""
        return self.act(request, commission_id, "release", reason)


urlpatterns = [
    path("api/agent/v1/commissions", AgentCommissionsListApi.as_view(), name="agent-commissions"),
    path("api/agent/v1/commissions/<id:commission_id>", AgentCommissionGetApi.as_view(), name="agent-commission"),
    path(
        "api/agent/v1/commissions/<id:commission_id>/approve",
        AgentCommissionApproveApi.as_view(),
        name="agent-commission-approve",
    ),
    path(
        "api/agent/v1/commissions/<id:commission_id>/void",
        AgentCommissionVoidApi.as_view(),
        name="agent-commission-void",
    ),
    path(
        "api/agent/v1/commissions/<id:commission_id>/hold",
        AgentCommissionHoldApi.as_view(),
        name="agent-commission-hold",
    ),
    path(
        "api/agent/v1/commissions/<id:commission_id>/release",
        AgentCommissionReleaseApi.as_view(),
        name="agent-commission-release",
    ),
]
