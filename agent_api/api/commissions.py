"""Agent routes for commissions: /api/agent/v1/commissions[/:id] (list with filters, get with its refund history)
and the owner's actions on one: approve, void, hold, release (commissions:write; idempotent and audited).
What a commission pays is always read from commissions.selectors.commissions_with_money, never a stored counter."""

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from commissions.approval import CommissionNotApprovable, commission_approve_early
from commissions.models import Commission, CommissionReview, CommissionStatus, LedgerEntry, NotificationOutbox
from commissions.selectors import commission_ledger, commission_refund_steps, commissions_with_money
from commissions.services import CommissionActionRefused, commission_hold, commission_release, commission_void
from core import messages as core_messages
from core.api.fields import StrictCharField
from core.api.query import Instant, InstantField, QueryIntegerField
from core.api.schema import PLATFORM_ERROR
from core.errors import BadRequestError, ConflictError, NotFoundError
from core.ids import MAX_BIGINT, id_parse
from fraud.rules import Rule
from programs.models import AgentKey
from tracking.selectors.clicks import flagged_by

from .. import messages
from ..selectors import agent_program_get, agent_programs, commission_reviews, visible_get
from ..services import AgentWrite
from . import serializers as s
from .base import AgentApi, AgentWriteApi, query_of
from .pagination import PageQuerySerializer, page_of

if TYPE_CHECKING:
    from commissions.selectors import CommissionWithMoney

COMMISSION_ID = OpenApiParameter("commission_id", int, OpenApiParameter.PATH, description="Commission id")
RULES = ", ".join(Rule.values)


def _rule_choice(field: str, help_text: str) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=Rule.choices,
        required=False,
        error_messages={"invalid_choice": messages.RULE_FILTER_INVALID.format(field=field, known=RULES)},
        help_text=help_text,
    )


NEXT_CURSOR = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for the next page; null on the last")


class CommissionsQuerySerializer(PageQuerySerializer):
    program_id = QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PROGRAM_ID_FILTER_INVALID,
        too_big=messages.PROGRAM_ID_FILTER_INVALID,
        required=False,
        help_text="Only this program's commissions (404 when the key may not see it)",
    )
    partner_id = QueryIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        invalid=messages.PARTNER_ID_FILTER_INVALID,
        too_big=messages.PARTNER_ID_FILTER_INVALID,
        required=False,
        help_text="Only this partner's commissions",
    )
    status = serializers.ChoiceField(
        choices=CommissionStatus.choices,
        required=False,
        error_messages={"invalid_choice": messages.COMMISSION_STATUS_INVALID},
        help_text="Only commissions in this state",
    )
    created_since = InstantField(
        message=messages.CREATED_SINCE_INVALID,
        required=False,
        help_text="Created at or after this time (a date means from the start of that UTC day)",
    )
    created_until = InstantField(
        message=messages.CREATED_UNTIL_INVALID,
        required=False,
        help_text="Created at or before this time (a date means up to the end of that UTC day)",
    )
    held = serializers.ChoiceField(
        choices=("true", "false"),
        required=False,
        error_messages={"invalid_choice": messages.HELD_FILTER_INVALID},
        help_text="true: only commissions on hold (by a rule or an owner); false: only those not on hold",
    )
    hold_rule = _rule_choice("hold_rule", f"Only commissions a fraud rule holds now ({RULES})")
    flagged = _rule_choice("flagged", "Only commissions whose sale this fraud rule flagged (held or not)")


COMMISSION_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "program_id": serializers.IntegerField(),
    "partner_id": serializers.IntegerField(),
    "partner_name": serializers.CharField(),
    "sale_id": serializers.IntegerField(),
    "transaction_id": serializers.CharField(
        allow_null=True, help_text="The sale's transaction id as the advertiser or processor sent it"
    ),
    "status": serializers.ChoiceField(choices=CommissionStatus.choices),
    "amount_cents": serializers.IntegerField(help_text="The commission as earned on the sale"),
    "payable_cents": serializers.IntegerField(
        help_text="What it still pays: the amount less refunds (0 once reversed, or when a refund cancelled it in "
        "its hold)"
    ),
    "clawed_back_cents": serializers.IntegerField(
        help_text="What refunds took back from the partner's balance (only once credited)"
    ),
    "currency": serializers.CharField(),
    "hold_until": serializers.DateTimeField(help_text="When the hold ends and the commission is approved"),
    "approved_at": serializers.DateTimeField(allow_null=True),
    "created_at": serializers.DateTimeField(),
    "refund_count": serializers.IntegerField(help_text="Refunds applied to the sale so far"),
    "refund_reason": serializers.CharField(help_text="The reason the latest refund gave (empty when none)"),
    "held_at": serializers.DateTimeField(
        allow_null=True, help_text="When the owner put it on hold (it is not approved until released); null if not"
    ),
    "hold_reason": serializers.CharField(help_text="Why it is on hold (empty when none was given or not held)"),
    "voided_at": serializers.DateTimeField(allow_null=True, help_text="When the owner voided it; null if not"),
    "void_reason": serializers.CharField(help_text="Why it was voided (empty unless voided)"),
    "flags": serializers.ListField(
        child=serializers.ChoiceField(choices=Rule.choices),
        help_text="The fraud rules that fired on its sale (whether or not they hold it)",
    ),
    "hold_rule": serializers.CharField(
        help_text="The fraud rule that holds it; empty when an owner held it or it is not on hold"
    ),
}
REVIEW_FIELDS: dict[str, serializers.Field] = {
    "action": serializers.ChoiceField(choices=CommissionReview.Action.choices),
    "rule": serializers.CharField(help_text="The fraud rule behind the hold; empty for an owner's decision"),
    "reason": serializers.CharField(),
    "actor": serializers.CharField(
        help_text='Who decided: "rule", "user:<username>", "agent key <masked>" or "admin:<username>"'
    ),
    "created_at": serializers.DateTimeField(),
}
LEDGER_ENTRY_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "kind": serializers.ChoiceField(choices=LedgerEntry.Kind.choices),
    "amount_cents": serializers.IntegerField(help_text="Signed: a credit adds, a clawback subtracts"),
    "currency": serializers.CharField(),
    "memo": serializers.CharField(),
    "created_at": serializers.DateTimeField(),
}
REFUND_STEP_FIELDS: dict[str, serializers.Field] = {
    "step": serializers.IntegerField(help_text="1 for the first refund applied, then 2, ..."),
    "reason": serializers.CharField(help_text="The reason on record when this refund was applied"),
    "reversed": serializers.BooleanField(help_text="This refund reversed the commission (the whole sale refunded)"),
    "was_paid_out": serializers.BooleanField(
        help_text="The commission had been paid out when refunded (the advertiser is told to review it)"
    ),
    "created_at": serializers.DateTimeField(),
}
REFUNDS_FIELDS: dict[str, serializers.Field] = {
    "count": serializers.IntegerField(help_text="Refunds applied (retries that were skipped are not counted)"),
    "sale_refunded_cents": serializers.IntegerField(help_text="How much of the sale was refunded, in its currency"),
    "deducted_cents": serializers.IntegerField(
        help_text="The commission's share of those refunds (taken from the balance only if it was credited)"
    ),
    "refund_ids": serializers.ListField(
        child=serializers.CharField(), help_text="The refund ids callers sent, in the order applied"
    ),
    "anonymous_amounts_cents": serializers.ListField(
        child=serializers.IntegerField(), help_text="Amounts of the refunds sent without a refund id, in order"
    ),
    "steps": inline_serializer("AgentCommissionRefundStep", fields=REFUND_STEP_FIELDS, many=True),
}
COMMISSION = inline_serializer("AgentCommission", fields=COMMISSION_FIELDS)
COMMISSIONS_OK = inline_serializer(
    "AgentCommissionList",
    fields={"data": serializers.ListField(child=COMMISSION), "next_cursor": NEXT_CURSOR},
)
COMMISSION_ACTION_OK = inline_serializer("AgentCommissionActionResult", fields={"data": COMMISSION})
STATE_CONFLICT = OpenApiResponse(
    PLATFORM_ERROR,
    description="commission_state: the commission's state does not allow this (the message says why); "
    "idempotency_conflict: the Idempotency-Key was used with another body",
)
COMMISSION_OK = inline_serializer(
    "AgentCommissionResult",
    fields={
        "data": inline_serializer(
            "AgentCommissionDetail",
            fields={
                **COMMISSION_FIELDS,
                "ledger": inline_serializer("AgentLedgerEntry", fields=LEDGER_ENTRY_FIELDS, many=True),
                "refunds": inline_serializer("AgentCommissionRefunds", fields=REFUNDS_FIELDS),
                "reviews": inline_serializer("AgentCommissionReview", fields=REVIEW_FIELDS, many=True),
            },
        )
    },
)


def visible_commissions(key: AgentKey) -> "QuerySet[CommissionWithMoney]":
    """The commissions of the programs the key may see, with what they pay, their partner and sale."""
    commissions = Commission.objects.filter(program__in=agent_programs(key)).select_related("partner", "sale")
    return commissions_with_money(commissions)


def commission_out(commission: "CommissionWithMoney") -> dict[str, Any]:
    return {
        "id": commission.pk,
        "program_id": commission.program_id,
        "partner_id": commission.partner_id,
        "partner_name": commission.partner.name,
        "sale_id": commission.sale_id,
        "transaction_id": commission.sale.processor_event_id,
        "status": commission.status,
        "amount_cents": commission.amount_cents,
        "payable_cents": commission.payable_cents,
        "clawed_back_cents": commission.clawed_back_cents,
        "currency": commission.currency,
        "hold_until": commission.hold_until.isoformat(),
        "approved_at": commission.approved_at.isoformat() if commission.approved_at else None,
        "created_at": commission.created_at.isoformat(),
        "refund_count": commission.refund_count,
        "refund_reason": commission.refund_reason,
        "held_at": commission.held_at.isoformat() if commission.held_at else None,
        "hold_reason": commission.hold_reason,
        "voided_at": commission.voided_at.isoformat() if commission.voided_at else None,
        "void_reason": commission.void_reason,
        "flags": list(commission.flags),
        "hold_rule": commission.hold_rule,
    }


def review_out(review: CommissionReview) -> dict[str, Any]:
    return {
        "action": review.action,
        "rule": review.rule,
        "reason": review.reason,
        "actor": review.actor,
        "created_at": review.created_at.isoformat(),
    }


def ledger_entry_out(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "kind": entry.kind,
        "amount_cents": entry.amount_cents,
        "currency": entry.currency,
        "memo": entry.memo,
        "created_at": entry.created_at.isoformat(),
    }


def refund_step_out(step: NotificationOutbox) -> dict[str, Any]:
    return {
        "step": step.refund_step,
        "reason": step.refund_reason,
        "reversed": step.reversed,
        "was_paid_out": step.was_paid_out,
        "created_at": step.created_at.isoformat(),
    }


def created_between(
    commissions: "QuerySet[CommissionWithMoney]", since: Instant | None, until: Instant | None
) -> "QuerySet[CommissionWithMoney]":
    if since is not None:
        commissions = commissions.filter(created_at__gte=since.value)
    if until is not None:
        # A date covers its whole UTC day.
        if until.is_date:
            commissions = commissions.filter(created_at__lt=until.value + timedelta(days=1))
        else:
            commissions = commissions.filter(created_at__lte=until.value)
    return commissions


class AgentCommissionsListApi(AgentApi):
    required_scopes = {"GET": "commissions:read"}

    @extend_schema(
        operation_id="agent_commissions_list",
        summary="The commissions of the programs this key may see, newest first",
        description="Each commission with what it still pays (`payable_cents`) and what refunds clawed back "
        "(`clawed_back_cents`), computed from the commission, never from a running counter. Filters combine.",
        parameters=[CommissionsQuerySerializer],
        responses={200: COMMISSIONS_OK, **s.errors(400, 404)},
    )
    def get(self, request):
        query = query_of(CommissionsQuerySerializer, request)
        commissions = visible_commissions(self.agent_key)
        if "program_id" in query:
            commissions = commissions.filter(program=agent_program_get(self.agent_key, query["program_id"]))
        if "partner_id" in query:
            commissions = commissions.filter(partner_id=query["partner_id"])
        if "status" in query:
            commissions = commissions.filter(status=query["status"])
        if "held" in query:
            commissions = commissions.filter(held_at__isnull=query["held"] == "false")
        if "hold_rule" in query:
            commissions = commissions.filter(hold_rule=query["hold_rule"])
        if "flagged" in query:
            commissions = commissions.filter(flagged_by(query["flagged"]))
        commissions = created_between(commissions, query.get("created_since"), query.get("created_until"))
        rows, next_cursor = page_of(commissions, query=query)
        return Response({"data": [commission_out(row) for row in rows], "next_cursor": next_cursor})


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
        responses={200: COMMISSION_OK, **s.errors(404)},
    )
    def get(self, request, commission_id: str):
        commission = visible_get(visible_commissions(self.agent_key), commission_id, messages.COMMISSION_NOT_FOUND)
        data = {
            **commission_out(commission),
            "ledger": [ledger_entry_out(entry) for entry in commission_ledger(commission_id=commission.pk)],
            "refunds": {
                "count": commission.refund_count,
                "sale_refunded_cents": commission.sale_refunded_cents,
                "deducted_cents": commission.deducted_cents,
                "refund_ids": list(commission.applied_refund_ids),
                "anonymous_amounts_cents": list(commission.applied_anonymous_amounts),
                "steps": [refund_step_out(step) for step in commission_refund_steps(commission_id=commission.pk)],
            },
            "reviews": [review_out(review) for review in commission_reviews(commission)],
        }
        return Response({"data": data})


REASON_LIMIT = 500


class CommissionVoidSerializer(serializers.Serializer):
    reason = StrictCharField(
        max_length=REASON_LIMIT,
        help_text="Why it is voided (1-500 characters); kept on the commission and in the ledger memo",
        error_messages={
            key: messages.VOID_REASON_INVALID
            for key in (
                "required",
                "null",
                "invalid",
                "blank",
                "max_length",
                "null_characters_not_allowed",
                "surrogate_characters_not_allowed",
            )
        },
    )


def _optional_reason(help_text: str) -> StrictCharField:
    return StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=REASON_LIMIT,
        help_text=help_text,
        error_messages={
            key: messages.HOLD_REASON_INVALID
            for key in ("invalid", "max_length", "null_characters_not_allowed", "surrogate_characters_not_allowed")
        },
    )


class CommissionHoldSerializer(serializers.Serializer):
    reason = _optional_reason(
        "Why it is held (at most 500 characters); holding a held commission again replaces the reason"
    )


class CommissionReleaseSerializer(serializers.Serializer):
    reason = _optional_reason("Why it is released (at most 500 characters); kept in its review entry")


def _body(serializer_class: type[serializers.Serializer], request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise BadRequestError(messages.BODY_NOT_OBJECT, code=messages.CODE_BAD_REQUEST)
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class CommissionActionApi(AgentWriteApi):
    """POST /commissions/:id/<action>: the domain service runs on the commission under its row lock, taken here
    first (every commission service, and the refund path, lock the commission before anything else), so the
    audit entry's `before` is the state the action found."""

    required_scopes = {"POST": "commissions:write"}

    @property
    def actor(self) -> str:
        """Who decided, as the commission's review entries name it."""
        return f"agent key {self.agent_key.masked}"

    def act(self, request, commission_id: str, action: str, run: Callable[[int], Commission]) -> Response:
        visible = visible_commissions(self.agent_key)
        parsed = id_parse(commission_id)
        if parsed is None or not visible.filter(pk=parsed).exists():
            raise NotFoundError(messages.COMMISSION_NOT_FOUND, code=messages.CODE_NOT_FOUND)
        pk: int = parsed

        def perform() -> AgentWrite:
            # The row lock, held until the write's transaction ends; the service takes it again.
            Commission.objects.select_for_update().filter(pk=pk).values_list("pk", flat=True).first()
            before = commission_out(visible.get(pk=pk))
            try:
                run(pk)
            except CommissionNotApprovable:
                raise ConflictError(
                    core_messages.COMMISSION_APPROVE_NOT_PENDING.format(status=before["status"]),
                    code=messages.CODE_COMMISSION_STATE,
                ) from None
            except CommissionActionRefused as refused:
                raise ConflictError(str(refused), code=messages.CODE_COMMISSION_STATE) from None
            after = commission_out(visible.get(pk=pk))
            return AgentWrite(200, {"data": after}, f"commission.{action}", "commission", pk, before, after)

        return self.write(request, perform)


class AgentCommissionApproveApi(CommissionActionApi):
    @extend_schema(
        summary="Approve a pending commission now, before its hold period ends: the partner is credited at once",
        description="Refused (409 commission_state) unless the commission is pending and not on hold (release it "
        "first).",
        parameters=[COMMISSION_ID],
        request=None,
        responses={200: COMMISSION_ACTION_OK, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request, commission_id: str):
        return self.act(request, commission_id, "approve", lambda pk: commission_approve_early(commission_id=pk))


class AgentCommissionVoidApi(CommissionActionApi):
    @extend_schema(
        summary="Void a commission with a reason: it pays nothing; what it had credited is deducted",
        description="The commission is reversed whole. If the partner had been credited for it, what was not "
        "already clawed back is deducted from the ledger and open withdrawals shrink to fit the balance. A paid "
        "commission (refund its sale instead) or one already reversed is refused (409 commission_state).",
        parameters=[COMMISSION_ID],
        request=CommissionVoidSerializer,
        responses={200: COMMISSION_ACTION_OK, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request, commission_id: str):
        reason = _body(CommissionVoidSerializer, request)["reason"]
        return self.act(
            request,
            commission_id,
            "void",
            lambda pk: commission_void(commission_id=pk, reason=reason, actor=self.actor),
        )


class AgentCommissionHoldApi(CommissionActionApi):
    @extend_schema(
        summary="Put a pending commission on hold: it is not approved, even when its hold period ends, until released",
        description="Only a pending commission can be held (409 commission_state otherwise). Holding a held "
        "commission again replaces its reason.",
        parameters=[COMMISSION_ID],
        request=CommissionHoldSerializer,
        responses={200: COMMISSION_ACTION_OK, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request, commission_id: str):
        reason = _body(CommissionHoldSerializer, request).get("reason") or ""
        return self.act(
            request,
            commission_id,
            "hold",
            lambda pk: commission_hold(commission_id=pk, reason=reason, actor=self.actor),
        )


class AgentCommissionReleaseApi(CommissionActionApi):
    @extend_schema(
        summary="Release a commission from hold: credited at once if its hold period has ended, else when it ends",
        description="A pending commission whose hold period has ended is approved and credited to the partner in "
        "the same request (`status` approved); one still in its hold period is approved by the hold job when it "
        "ends. Whether an owner or a fraud rule held it, the release is recorded in its `reviews` with the reason "
        "given. A commission that is not on hold is refused (409 commission_state).",
        parameters=[COMMISSION_ID],
        request=CommissionReleaseSerializer,
        responses={200: COMMISSION_ACTION_OK, **s.errors(400, 404), 409: STATE_CONFLICT},
    )
    def post(self, request, commission_id: str):
        reason = _body(CommissionReleaseSerializer, request).get("reason") or ""
        return self.act(
            request,
            commission_id,
            "release",
            lambda pk: commission_release(commission_id=pk, actor=self.actor, reason=reason),
        )


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
