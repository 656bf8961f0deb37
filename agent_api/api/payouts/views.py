"""Agent routes for payouts: /api/agent/v1/payouts/balances (partner balances from the ledger) and
/api/agent/v1/payouts/withdrawals, and paying one: POST /api/agent/v1/payouts/withdrawals/:id/mark-paid
(payouts:write; idempotent and audited). Payout runs (/payouts/runs: preview, confirm, read) and their payouts
(/payouts/payouts: read, mark a manual-rail one paid or failed) go through payouts.services; a key sees the runs
and payouts of the programs it may see.

Ledger entries of credits and refund clawbacks carry their program; payouts and manual adjustments carry none
(a withdrawal pays the partner's whole balance in a currency, whatever the programs). So a key that sees every
program of its workspace reads each partner's whole ledger, the balance the partner can withdraw; a key limited
to some programs, or a call filtered by program_id, reads only the entries of those programs, which leaves out
payouts and adjustments. Each balance says which it is (`ledger_scope`). Withdrawals belong to a partner, not a
program: a key sees those of the partners it may see (agent_partners: every partner of its workspace, or those
enrolled in one of the programs it is limited to)."""

from typing import Any

from django.db.models import Prefetch, QuerySet
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from commissions.services import withdrawal_mark_paid
from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError
from payouts.models import Payout, PayoutCommission, PayoutRun, PayoutRunAudit, Rail
from payouts.selectors import clawbacks_after_sending
from payouts.services import (
    PayoutError,
    RunAlreadyConfirmed,
    payout_mark_failed,
    payout_mark_paid,
    run_confirm,
    run_preview,
)
from programs.models import AgentKey, Program

from ... import messages
from ...selectors import (
    agent_balance_scope,
    agent_program_get,
    agent_programs,
    agent_withdrawals_list,
    narrowed,
    partner_balances,
    visible_get,
    visible_withdrawals,
)
from ...services import AgentWrite
from .. import serializers as s
from ..base import AgentApi, AgentListApi, AgentWriteApi, body_of, list_schema, query_of
from ..pagination import page_of
from . import messages as payout_messages
from .serializers import (
    AgentPartnerBalanceListSerializer,
    AgentPayoutListSerializer,
    AgentPayoutResultSerializer,
    AgentPayoutRunListSerializer,
    AgentPayoutRunResultSerializer,
    AgentPayoutRunSerializer,
    AgentPayoutSerializer,
    AgentWithdrawalListSerializer,
    AgentWithdrawalResultSerializer,
    AgentWithdrawalSerializer,
    BalancesQuerySerializer,
    PayoutMarkFailedSerializer,
    PayoutMarkPaidSerializer,
    PayoutsQuerySerializer,
    RunPreviewSerializer,
    RunsQuerySerializer,
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


# --- Payout runs and payouts -------------------------------------------------------------------------------------

RUN_ID = OpenApiParameter("run_id", int, OpenApiParameter.PATH, description="Payout run id")
PAYOUT_ID = OpenApiParameter("payout_id", int, OpenApiParameter.PATH, description="Payout id")
RUN_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="payout_run_confirmed: the run was confirmed already (nothing more is paid); idempotency_conflict: "
    "the Idempotency-Key was used with another body",
)
PAYOUT_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="payout_rail: a Stripe payout is settled by its transfer, never by hand; payout_state: the payout "
    "is no longer open (paid, failed or cancelled); idempotency_conflict: the Idempotency-Key was used with another "
    "body",
)


def _with_payouts(payouts: QuerySet[Payout]) -> QuerySet[Payout]:
    return payouts.select_related("partner").prefetch_related(
        Prefetch("covered", queryset=PayoutCommission.objects.filter(active=True).order_by("commission_id"))
    )


def agent_payout_runs(
    key: AgentKey, *, program: Program | None = None, currency: str | None = None, status: str | None = None
) -> QuerySet[PayoutRun]:
    """The runs of the programs the key may see, each with its payouts and audit trail (four reads a page)."""
    runs = PayoutRun.objects.filter(program__in=agent_programs(key)).prefetch_related(
        Prefetch("payouts", queryset=_with_payouts(Payout.objects.order_by("pk"))),
        Prefetch("audit", queryset=PayoutRunAudit.objects.order_by("created_at", "pk")),
    )
    return narrowed(runs, program=program, currency=currency, status=status)


def agent_payouts(
    key: AgentKey,
    *,
    program: Program | None = None,
    run_id: int | None = None,
    partner_id: int | None = None,
    status: str | None = None,
) -> QuerySet[Payout]:
    """The payouts of the programs the key may see, each with its partner and the commissions it covers."""
    payouts = _with_payouts(Payout.objects.filter(program__in=agent_programs(key)))
    return narrowed(payouts, program=program, run_id=run_id, partner_id=partner_id, status=status)


def agent_payout_run_get(key: AgentKey, run_id: object) -> PayoutRun:
    return visible_get(agent_payout_runs(key), run_id, payout_messages.RUN_NOT_FOUND)


def agent_payout_get(key: AgentKey, payout_id: object) -> Payout:
    return visible_get(agent_payouts(key), payout_id, payout_messages.PAYOUT_NOT_FOUND)


def run_context(runs: list[PayoutRun]) -> dict[str, Any]:
    """The serializers' context for these runs (payouts prefetched): their payouts' clawbacks after sending, read
    once for all of them."""
    return {"clawbacks": clawbacks_after_sending([payout for run in runs for payout in run.payouts.all()])}


class PayoutWriteApi(AgentWriteApi):
    @property
    def actor(self) -> str:
        """Who acted, as the run's audit trail names it."""
        return f"agent key {self.agent_key.masked}"


@list_schema(
    operation_id="agent_payout_runs_list",
    summary="Payout runs of the programs this key may see, newest first, with their lines, payouts and audit",
    error_statuses=(400, 404),
)
class AgentPayoutRunsApi(AgentListApi, PayoutWriteApi):
    required_scopes = {"GET": "payouts:read", "POST": "payouts:write"}
    query_serializer = RunsQuerySerializer
    selector = staticmethod(agent_payout_runs)
    output_serializer = AgentPayoutRunListSerializer

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"program": self.program_filter(query), "currency": query.get("currency"), "status": query.get("status")}

    def output_context(self, page: list[PayoutRun]) -> dict[str, Any]:
        return run_context(page)

    @extend_schema(
        operation_id="agent_payout_runs_preview",
        summary="Preview a payout run: every partner of the program owed at least the minimum in the currency",
        description="Nothing is paid or debited: the run lists each partner whose available balance (credited "
        "commissions past their hold, less clawbacks, payouts and open withdrawals) reaches the minimum, with the "
        "amount, the rail and, when the partner cannot be paid now, why. Confirm it to pay the ready lines.",
        request=RunPreviewSerializer,
        responses={201: AgentPayoutRunResultSerializer, **s.errors(400, 404, 409)},
    )
    def post(self, request: Request) -> Response:
        body = body_of(RunPreviewSerializer, request, object_required=False)
        program = agent_program_get(self.agent_key, body["program_id"])

        def perform() -> AgentWrite:
            try:
                run = run_preview(
                    program=program,
                    currency=body["currency"],
                    actor=self.actor,
                    minimum_cents=body.get("minimum_cents"),
                )
            except PayoutError as refused:
                raise BadRequestError(str(refused), code=messages.CODE_BAD_REQUEST) from None
            after = AgentPayoutRunSerializer(agent_payout_run_get(self.agent_key, run.pk)).data
            return AgentWrite(201, {"data": after}, "payout_run.preview", "payout_run", run.pk, None, after)

        return self.write(request, perform)


class AgentPayoutRunApi(AgentApi):
    required_scopes = {"GET": "payouts:read"}

    @extend_schema(
        summary="One payout run with its lines, payouts and audit trail",
        parameters=[RUN_ID],
        responses={200: AgentPayoutRunResultSerializer, **s.errors(400, 404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        run = agent_payout_run_get(self.agent_key, run_id)
        return Response(AgentPayoutRunResultSerializer({"data": run}, context=run_context([run])).data)


class AgentPayoutRunConfirmApi(PayoutWriteApi):
    required_scopes = {"POST": "payouts:write"}

    @extend_schema(
        summary="Confirm a previewed run: one payout per ready partner, each debited on the ledger at once",
        description="What each partner is paid is read again under the partner's lock (it may have changed since "
        "the preview). Stripe payouts are sent as transfers after the answer; PayPal and Wise payouts wait for "
        "the owner to pay them and mark them paid. A partner another run is paying is left out. A run is "
        "confirmed once (409 payout_run_confirmed).",
        parameters=[RUN_ID],
        request=None,
        responses={200: AgentPayoutRunResultSerializer, **s.errors(400, 404), 409: RUN_CONFLICT},
    )
    def post(self, request: Request, run_id: str) -> Response:
        run = agent_payout_run_get(self.agent_key, run_id)

        def perform() -> AgentWrite:
            before = AgentPayoutRunSerializer(run).data
            try:
                run_confirm(run_id=run.pk, actor=self.actor)
            except RunAlreadyConfirmed:
                raise ConflictError(
                    payout_messages.RUN_CONFIRMED.format(run_id=run.pk), code=payout_messages.CODE_RUN_CONFIRMED
                ) from None
            after = AgentPayoutRunSerializer(agent_payout_run_get(self.agent_key, run.pk)).data
            return AgentWrite(200, {"data": after}, "payout_run.confirm", "payout_run", run.pk, before, after)

        return self.write(request, perform)


@list_schema(
    operation_id="agent_payouts_list",
    summary="Payouts of the programs this key may see, newest first",
    error_statuses=(400, 404),
)
class AgentPayoutsApi(AgentListApi):
    required_scopes = {"GET": "payouts:read"}
    query_serializer = PayoutsQuerySerializer
    selector = staticmethod(agent_payouts)
    output_serializer = AgentPayoutListSerializer

    def run_filter(self, query: dict[str, Any]) -> int | None:
        """The run ?run_id= names (404 when the key may not see it, as a program_id it may not see), or None."""
        if "run_id" not in query:
            return None
        visible = PayoutRun.objects.filter(program__in=agent_programs(self.agent_key))
        return visible_get(visible, query["run_id"], payout_messages.RUN_NOT_FOUND).pk

    def filters(self, query: dict[str, Any]) -> dict[str, Any]:
        return {
            "program": self.program_filter(query),
            "run_id": self.run_filter(query),
            "partner_id": query.get("partner_id"),
            "status": query.get("status"),
        }

    def output_context(self, page: list[Payout]) -> dict[str, Any]:
        return {"clawbacks": clawbacks_after_sending(page)}


class AgentPayoutApi(AgentApi):
    required_scopes = {"GET": "payouts:read"}

    @extend_schema(
        summary="One payout with the commissions it covers",
        parameters=[PAYOUT_ID],
        responses={200: AgentPayoutResultSerializer, **s.errors(400, 404)},
    )
    def get(self, request: Request, payout_id: str) -> Response:
        return Response(AgentPayoutResultSerializer({"data": agent_payout_get(self.agent_key, payout_id)}).data)


class PayoutSettleApi(PayoutWriteApi):
    """POST /payouts/payouts/:id/mark-paid or /mark-failed: a manual-rail payout the owner paid (or could not
    pay) outside the service. The service decides under its locks whether the payout is still open."""

    required_scopes = {"POST": "payouts:write"}
    action = ""
    body_serializer: type[PayoutMarkPaidSerializer] | type[PayoutMarkFailedSerializer]

    def settle(self, payout: Payout, body: dict[str, Any]) -> bool:
        raise NotImplementedError

    def post(self, request: Request, payout_id: str) -> Response:
        payout = agent_payout_get(self.agent_key, payout_id)
        body = body_of(self.body_serializer, request, object_required=False)

        def perform() -> AgentWrite:
            if payout.rail == Rail.STRIPE:
                raise ConflictError(payout_messages.PAYOUT_STRIPE_BY_HAND, code=payout_messages.CODE_PAYOUT_RAIL)
            before = AgentPayoutSerializer(payout).data
            if not self.settle(payout, body):
                found = agent_payout_get(self.agent_key, payout.pk)
                raise ConflictError(
                    payout_messages.PAYOUT_NOT_OPEN.format(status=found.status), code=payout_messages.CODE_PAYOUT_STATE
                )
            after = AgentPayoutSerializer(agent_payout_get(self.agent_key, payout.pk)).data
            return AgentWrite(200, {"data": after}, f"payout.{self.action}", "payout", payout.pk, before, after)

        return self.write(request, perform)


class AgentPayoutMarkPaidApi(PayoutSettleApi):
    action = "mark_paid"
    body_serializer = PayoutMarkPaidSerializer

    def settle(self, payout: Payout, body: dict[str, Any]) -> bool:
        return payout_mark_paid(payout_id=payout.pk, actor=self.actor, reference=body.get("reference", ""))

    @extend_schema(
        summary="Mark a PayPal or Wise payout paid: the owner paid it outside the service",
        description="Its commissions become `paid` and payout.paid is sent; the partner is emailed. Its ledger "
        "debit was made when the run was confirmed, so the balance does not change.",
        parameters=[PAYOUT_ID],
        request=PayoutMarkPaidSerializer,
        responses={200: AgentPayoutResultSerializer, **s.errors(400, 404), 409: PAYOUT_CONFLICT},
    )
    def post(self, request: Request, payout_id: str) -> Response:
        return super().post(request, payout_id)


class AgentPayoutMarkFailedApi(PayoutSettleApi):
    action = "mark_failed"
    body_serializer = PayoutMarkFailedSerializer

    def settle(self, payout: Payout, body: dict[str, Any]) -> bool:
        return payout_mark_failed(
            payout_id=payout.pk, code=body.get("code", "manual"), message=body["message"], actor=self.actor
        )

    @extend_schema(
        summary="Mark a PayPal or Wise payout failed: its amount goes back on the partner's balance",
        description="A credit of what it held goes back on the ledger, its commissions can be paid by a later run, "
        "payout.failed is sent and the partner is emailed the message.",
        parameters=[PAYOUT_ID],
        request=PayoutMarkFailedSerializer,
        responses={200: AgentPayoutResultSerializer, **s.errors(400, 404), 409: PAYOUT_CONFLICT},
    )
    def post(self, request: Request, payout_id: str) -> Response:
        return super().post(request, payout_id)


urlpatterns = [
    path("api/agent/v1/payouts/balances", AgentBalancesApi.as_view(), name="agent-payout-balances"),
    path("api/agent/v1/payouts/withdrawals", AgentWithdrawalsApi.as_view(), name="agent-payout-withdrawals"),
    path(
        "api/agent/v1/payouts/withdrawals/<id:withdrawal_id>/mark-paid",
        AgentWithdrawalMarkPaidApi.as_view(),
        name="agent-payout-withdrawal-mark-paid",
    ),
    path("api/agent/v1/payouts/runs", AgentPayoutRunsApi.as_view(), name="agent-payout-runs"),
    path("api/agent/v1/payouts/runs/<id:run_id>", AgentPayoutRunApi.as_view(), name="agent-payout-run"),
    path(
        "api/agent/v1/payouts/runs/<id:run_id>/confirm",
        AgentPayoutRunConfirmApi.as_view(),
        name="agent-payout-run-confirm",
    ),
    path("api/agent/v1/payouts/payouts", AgentPayoutsApi.as_view(), name="agent-payouts"),
    path("api/agent/v1/payouts/payouts/<id:payout_id>", AgentPayoutApi.as_view(), name="agent-payout"),
    path(
        "api/agent/v1/payouts/payouts/<id:payout_id>/mark-paid",
        AgentPayoutMarkPaidApi.as_view(),
        name="agent-payout-mark-paid",
    ),
    path(
        "api/agent/v1/payouts/payouts/<id:payout_id>/mark-failed",
        AgentPayoutMarkFailedApi.as_view(),
        name="agent-payout-mark-failed",
    ),
]
