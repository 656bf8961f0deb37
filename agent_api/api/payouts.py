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

from django.db.models import QuerySet
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from commissions.models import Withdrawal
from commissions.selectors import ledger_balances, open_withdrawals_by_partner
from commissions.services import withdrawal_mark_paid
from core.api.query import QueryIntegerField
from core.api.schema import PLATFORM_ERROR
from core.errors import ConflictError
from core.ids import MAX_BIGINT
from programs.models import AgentKey

from .. import messages
from ..selectors import agent_partners, agent_program_get, agent_programs, visible_get
from ..services import AgentWrite
from . import serializers as s
from .base import AgentApi, AgentWriteApi, query_of
from .pagination import PageQuerySerializer, page_of

LEDGER_WHOLE = "partner"
LEDGER_PROGRAMS = "programs"
NEXT_CURSOR = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for the next page; null on the last")


def partner_id_filter() -> QueryIntegerField:
    return QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PARTNER_ID_FILTER_INVALID,
        too_big=messages.PARTNER_ID_FILTER_INVALID,
        required=False,
        help_text="Only this partner",
    )


class BalancesQuerySerializer(PageQuerySerializer):
    partner_id = partner_id_filter()
    program_id = QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PROGRAM_ID_FILTER_INVALID,
        too_big=messages.PROGRAM_ID_FILTER_INVALID,
        required=False,
        help_text="Only the partners enrolled in this program, and only its ledger entries (404 when the key may "
        "not see it)",
    )


class WithdrawalsQuerySerializer(PageQuerySerializer):
    partner_id = partner_id_filter()
    status = serializers.ChoiceField(
        choices=Withdrawal.Status.choices,
        required=False,
        error_messages={"invalid_choice": messages.WITHDRAWAL_STATUS_INVALID},
        help_text="Only withdrawals in this state",
    )


BALANCE_FIELDS: dict[str, serializers.Field] = {
    "currency": serializers.CharField(),
    "balance_cents": serializers.IntegerField(
        help_text="The sum of the ledger entries read (see ledger_scope); negative when clawbacks exceed credits"
    ),
    "open_withdrawals_cents": serializers.IntegerField(
        help_text="What the partner's open withdrawals in this currency ask for (withdrawals have no program)"
    ),
}
PARTNER_BALANCE_FIELDS: dict[str, serializers.Field] = {
    "partner_id": serializers.IntegerField(),
    "partner_name": serializers.CharField(),
    "ledger_scope": serializers.ChoiceField(
        choices=[
            (LEDGER_WHOLE, "The partner's whole ledger: what the partner can withdraw"),
            (LEDGER_PROGRAMS, "Only the entries of the key's programs (or program_id): credits and clawbacks"),
        ],
        help_text=f"`{LEDGER_WHOLE}`: every entry of the partner, so the balance is what the partner can withdraw. "
        f"`{LEDGER_PROGRAMS}`: the key is limited to some programs or program_id was given, so only the credits "
        "and refund clawbacks of those programs count; payouts and manual adjustments (which have no program) "
        "are left out",
    ),
    "balances": inline_serializer(
        "AgentPartnerCurrencyBalance",
        fields=BALANCE_FIELDS,
        many=True,
        help_text="One per currency with ledger entries or open withdrawals, by currency code; empty when none",
    ),
}
WITHDRAWAL_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "partner_id": serializers.IntegerField(),
    "partner_name": serializers.CharField(),
    "amount_cents": serializers.IntegerField(
        help_text="What it pays: the requested amount, less what later refund clawbacks cut from an open one"
    ),
    "requested_cents": serializers.IntegerField(help_text="What the partner asked for"),
    "currency": serializers.CharField(),
    "status": serializers.ChoiceField(choices=Withdrawal.Status.choices),
    "created_at": serializers.DateTimeField(),
    "updated_at": serializers.DateTimeField(help_text="The last change (amount cut, paid or cancelled)"),
    "paid_at": serializers.DateTimeField(
        allow_null=True, help_text="When it was paid (a paid withdrawal never changes again); null unless paid"
    ),
}
BALANCES_OK = inline_serializer(
    "AgentPartnerBalanceList",
    fields={
        "data": inline_serializer("AgentPartnerBalance", fields=PARTNER_BALANCE_FIELDS, many=True),
        "next_cursor": NEXT_CURSOR,
    },
)
WITHDRAWAL = inline_serializer("AgentWithdrawal", fields=WITHDRAWAL_FIELDS)
WITHDRAWALS_OK = inline_serializer(
    "AgentWithdrawalList",
    fields={"data": serializers.ListField(child=WITHDRAWAL), "next_cursor": NEXT_CURSOR},
)
WITHDRAWAL_OK = inline_serializer("AgentWithdrawalResult", fields={"data": WITHDRAWAL})
WITHDRAWAL_ID = OpenApiParameter("withdrawal_id", int, OpenApiParameter.PATH, description="Withdrawal id")
NOT_OPEN = OpenApiResponse(
    PLATFORM_ERROR,
    description="withdrawal_state: the withdrawal is no longer open (paid or cancelled); idempotency_conflict: "
    "the Idempotency-Key was used with another body",
)


def balances_out(balances: dict[str, int], open_withdrawals: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "currency": currency,
            "balance_cents": balances.get(currency, 0),
            "open_withdrawals_cents": open_withdrawals.get(currency, 0),
        }
        for currency in sorted({*balances, *open_withdrawals})
    ]


def withdrawal_out(withdrawal: Withdrawal) -> dict[str, Any]:
    paid = withdrawal.status == Withdrawal.Status.PAID
    return {
        "id": withdrawal.pk,
        "partner_id": withdrawal.partner_id,
        "partner_name": withdrawal.partner.name,
        "amount_cents": withdrawal.amount_cents,
        "requested_cents": withdrawal.requested_cents,
        "currency": withdrawal.currency,
        "status": withdrawal.status,
        "created_at": withdrawal.created_at.isoformat(),
        "updated_at": withdrawal.updated_at.isoformat(),
        # Marking paid is the last write a withdrawal gets (the clawback cut and cancelling touch open ones only).
        "paid_at": withdrawal.updated_at.isoformat() if paid else None,
    }


def visible_withdrawals(key: AgentKey) -> QuerySet[Withdrawal]:
    """The withdrawals of the partners the key may see (a withdrawal has no program)."""
    return Withdrawal.objects.filter(partner__in=agent_partners(key)).select_related("partner")


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
        responses={200: BALANCES_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        query = query_of(BalancesQuerySerializer, request)
        key = self.agent_key
        partners = agent_partners(key)
        programs = agent_programs(key)
        whole_ledger = key.limited_program_ids is None
        if "program_id" in query:
            program = agent_program_get(key, query["program_id"])
            partners = partners.filter(program_links__program=program)
            programs = programs.filter(pk=program.pk)
            whole_ledger = False
        if "partner_id" in query:
            partners = partners.filter(pk=query["partner_id"])
        rows, next_cursor = page_of(partners, query=query)
        partner_ids = [partner.pk for partner in rows]
        balances = ledger_balances(partner_ids=partner_ids, programs=None if whole_ledger else programs)
        open_withdrawals = open_withdrawals_by_partner(partner_ids=partner_ids)
        data = [
            {
                "partner_id": partner.pk,
                "partner_name": partner.name,
                "ledger_scope": LEDGER_WHOLE if whole_ledger else LEDGER_PROGRAMS,
                "balances": balances_out(balances.get(partner.pk, {}), open_withdrawals.get(partner.pk, {})),
            }
            for partner in rows
        ]
        return Response({"data": data, "next_cursor": next_cursor})


class AgentWithdrawalsApi(AgentApi):
    required_scopes = {"GET": "payouts:read"}

    @extend_schema(
        summary="Withdrawals of the partners this key may see, newest first",
        description="A withdrawal belongs to a partner, not a program: a key sees those of every partner it may "
        "see (those of its workspace, or those enrolled in one of the programs it is limited to).",
        parameters=[WithdrawalsQuerySerializer],
        responses={200: WITHDRAWALS_OK, **s.errors(400)},
    )
    def get(self, request):
        query = query_of(WithdrawalsQuerySerializer, request)
        withdrawals = visible_withdrawals(self.agent_key)
        if "partner_id" in query:
            withdrawals = withdrawals.filter(partner_id=query["partner_id"])
        if "status" in query:
            withdrawals = withdrawals.filter(status=query["status"])
        rows, next_cursor = page_of(withdrawals, query=query)
        return Response({"data": [withdrawal_out(row) for row in rows], "next_cursor": next_cursor})


class AgentWithdrawalMarkPaidApi(AgentWriteApi):
    required_scopes = {"POST": "payouts:write"}

    @extend_schema(
        summary="Mark an open withdrawal paid: the payout enters the partner's ledger",
        description="Records that the partner was paid: a payout entry of the withdrawal's amount in the "
        "partner's ledger, and the partner's oldest approved commissions that the payout covers become `paid`. "
        "A withdrawal that is no longer open (already paid, or cancelled) is refused (409 withdrawal_state).",
        parameters=[WITHDRAWAL_ID],
        request=None,
        responses={200: WITHDRAWAL_OK, **s.errors(400, 404), 409: NOT_OPEN},
    )
    def post(self, request, withdrawal_id: str):
        visible = visible_withdrawals(self.agent_key)
        withdrawal = visible_get(visible, withdrawal_id, messages.WITHDRAWAL_NOT_FOUND)

        def perform() -> AgentWrite:
            # Read without a lock: withdrawal_mark_paid locks commissions, partner, then the withdrawal (the refund
            # path's order); locking the withdrawal first here could deadlock with a refund. The service re-reads
            # it under its lock and decides on that.
            found = visible.get(pk=withdrawal.pk)
            before = withdrawal_out(found)
            if not withdrawal_mark_paid(withdrawal=found):
                found.refresh_from_db()
                raise ConflictError(
                    messages.WITHDRAWAL_NOT_OPEN.format(status=found.status), code=messages.CODE_WITHDRAWAL_STATE
                )
            after = withdrawal_out(visible.get(pk=withdrawal.pk))
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
