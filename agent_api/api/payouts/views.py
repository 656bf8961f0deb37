"""Agent routes for payouts: /api/agent/v1/payouts/balances (partner balances from the ledger) and
/api/agent/v1/payouts/withdrawals, and paying one: POST /api/agent/v1/payouts/withdrawals/:id/mark-paid
(payouts:write; idempotent and audited).

Ledger entries of credits and refund clawbacks carry their program; payouts and manual adjustments carry none
(a withdrawal pays the partner's whole balance in a currency, whatever the programs). So a key that sees every
program of its workspace reads each partner's whole ledger, the balance the partner can withdraw; a key limited
to some programs, or a call filtered by program_id, reads only the entries of those programs, which leaves out
payouts and adjustments. Each balance says which it is (`ledger_scope`). Withdrawals belong to a partner, not a
program: a key sees those of the partners it may see (agent_partners: every partner of its workspace, or those
enrolled in one of the programs it is limited to)."""

from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from commissions.services import withdrawal_mark_paid
from core.api.schema import PLATFORM_ERROR
from core.errors import ConflictError

from ... import messages
from ...selectors import (
    agent_balance_scope,
    agent_program_get,
    agent_withdrawals_list,
    partner_balances,
    visible_get,
    visible_withdrawals,
)
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentApi, AgentListApi, AgentWriteApi, list_schema, query_of
from ..pagination import page_of
from .serializers import (
    AgentPartnerBalanceListSerializer,
    AgentWithdrawalListSerializer,
    AgentWithdrawalResultSerializer,
    AgentWithdrawalSerializer,
    BalancesQuerySerializer,
    WithdrawalsQuerySerializer,
)

WITHDRAWAL_ID = OpenApiParameter("withdrawal_id", int, OpenApiParameter.PATH, description="Withdrawal id")
NOT_OPEN = OpenApiResponse(
    PLATFORM_ERROR,
    description="withdrawal_state: the withdrawal is no longer open (paid or cancelled); idempotency_conflict: "
    "the Idempotency-Key was used with another body",
)


class AgentBalancesApi(AgentApi):
    required_scopes = {"GET": "payouts:read"}

    @extend_schema(
        summary="Partner balances from the ledger, per currency, newest partner first",
        description="The partners this key may see (those of its workspace, or those enrolled in one of the "
        "programs it is limited to), each with its ledger balance and "
        "open withdrawals per currency. A key limited to some programs (or a call with program_id) only reads "
        "the ledger entries of those programs: credits less refund clawbacks, without payouts or manual "
        "adjustments, which belong to no program; `ledger_scope` says which ledger a balance sums. Pages count "
        "partners.",
        parameters=[BalancesQuerySerializer],
        responses={200: AgentPartnerBalanceListSerializer, **s.errors(400, 404)},
    )
    def get(self, request: Request) -> Response:
        query = query_of(BalancesQuerySerializer, request)
        key = self.agent_key
        program = agent_program_get(key, query["program_id"]) if "program_id" in query else None
        scope = agent_balance_scope(key, program=program, partner_id=query.get("partner_id"))
        rows, next_cursor = page_of(scope.partners, query=query)
        body = {"data": partner_balances(scope, rows), "next_cursor": next_cursor}
        return Response(AgentPartnerBalanceListSerializer(body).data)


@list_schema(
    summary="Withdrawals of the partners this key may see, newest first",
    description="A withdrawal belongs to a partner, not a program: a key sees those of every partner it may "
    "see (those of its workspace, or those enrolled in one of the programs it is limited to).",
    error_statuses=(400,),
)
class AgentWithdrawalsApi(AgentListApi):
    required_scopes = {"GET": "payouts:read"}
    query_serializer = WithdrawalsQuerySerializer
    selector = staticmethod(agent_withdrawals_list)
    output_serializer = AgentWithdrawalListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"partner_id": query.get("partner_id"), "status": query.get("status")}


class AgentWithdrawalMarkPaidApi(AgentWriteApi):
    required_scopes = {"POST": "payouts:write"}

    @extend_schema(
        summary="Mark an open withdrawal paid: the payout enters the partner's ledger",
        description="Records that the partner was paid: a payout entry of the withdrawal's amount in the "
        "partner's ledger, and the partner's oldest approved commissions that the payout covers become `paid`. "
        "A withdrawal that is no longer open (already paid, or cancelled) is refused (409 withdrawal_state).",
        parameters=[WITHDRAWAL_ID],
        request=None,
        responses={200: AgentWithdrawalResultSerializer, **s.errors(400, 404), 409: NOT_OPEN},
    )
    def post(self, request: Request, withdrawal_id: str) -> Response:
        visible = visible_withdrawals(self.agent_key)
        withdrawal = visible_get(visible, withdrawal_id, messages.WITHDRAWAL_NOT_FOUND)

        def perform() -> AgentWrite:
            # Read without a lock: withdrawal_mark_paid locks commissions, partner, then the withdrawal (the refund
            # path's order); locking the withdrawal first here could deadlock with a refund. The service re-reads
            # it under its lock and decides on that.
            found = visible.get(pk=withdrawal.pk)
            before = AgentWithdrawalSerializer(found).data
            if not withdrawal_mark_paid(withdrawal=found):
                found.refresh_from_db()
                raise ConflictError(
                    messages.WITHDRAWAL_NOT_OPEN.format(status=found.status), code=messages.CODE_WITHDRAWAL_STATE
                )
            after = AgentWithdrawalSerializer(visible.get(pk=withdrawal.pk)).data
            return AgentWrite(200, {"data": after}, "withdrawal.mark_paid", "withdrawal", withdrawal.pk, before, after)

        return self.write(request, perform)


urlpatterns = [
    path("api/agent/v1/payouts/balances", AgentBalancesApi.as_view(), name="agent-payout-balances"),
    path("api/agent/v1/payouts/withdrawals", AgentWithdrawalsApi.as_view(), name="agent-payout-withdrawals"),
    path(
        "api/agent/v1/payouts/withdrawals/<id:withdrawal_id>/mark-paid",
        AgentWithdrawalMarkPaidApi.as_view(),
        name="agent-payout-withdrawal-mark-paid",
    ),
]
