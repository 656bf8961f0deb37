"""What the commission routes read (query and body serializers) and answer (output serializers, which both render
the bodies and describe them in the OpenAPI document)."""

from typing import Any

from rest_framework import serializers

from commissions.models import CommissionKind, CommissionReview, CommissionStatus, LedgerEntry
from core.api.fields import IsoDateTimeField, StrictCharField
from core.api.query import InstantField
from fraud.rules import Rule

from ... import messages
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

RULES = ", ".join(Rule.values)
REASON_LIMIT = 500


# --- input ----------------------------------------------------------------------------------------------------------


def _rule_choice(field: str, help_text: str) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=Rule.choices,
        required=False,
        error_messages={"invalid_choice": messages.RULE_FILTER_INVALID.format(field=field, known=RULES)},
        help_text=help_text,
    )


class CommissionsQuerySerializer(PageQuerySerializer):
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID, "Only this program's commissions (404 when the key may not see it)"
    )
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner's commissions")
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


class CommissionVoidSerializer(serializers.Serializer[Any]):
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


class CommissionHoldSerializer(serializers.Serializer[Any]):
    reason = _optional_reason(
        "Why it is held (at most 500 characters); holding a held commission again replaces the reason"
    )


class CommissionReleaseSerializer(serializers.Serializer[Any]):
    reason = _optional_reason("Why it is released (at most 500 characters); kept in its review entry")


# --- output ---------------------------------------------------------------------------------------------------------


# A commission (commissions.selectors.CommissionWithMoney, with its partner and sale).
class AgentCommissionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    partner_id = serializers.IntegerField()
    partner_name = serializers.CharField(source="partner.name")
    kind = serializers.ChoiceField(
        choices=CommissionKind.choices, help_text="sale, or bonus: a milestone bonus of the partner's group (no sale)"
    )
    sale_id = serializers.IntegerField(allow_null=True, help_text="The sale it was earned on; null for a bonus")
    transaction_id = serializers.CharField(
        source="sale.processor_event_id",
        allow_null=True,
        help_text="The sale's transaction id as the advertiser or processor sent it; null for a bonus",
    )
    status = serializers.ChoiceField(choices=CommissionStatus.choices)
    amount_cents = serializers.IntegerField(help_text="The commission as earned on the sale")
    payable_cents = serializers.IntegerField(
        help_text="What it still pays: the amount less refunds (0 once reversed, or when a refund cancelled it in "
        "its hold)"
    )
    clawed_back_cents = serializers.IntegerField(
        help_text="What refunds took back from the partner's balance (only once credited)"
    )
    currency = serializers.CharField()
    hold_until = IsoDateTimeField(help_text="When the hold ends and the commission is approved")
    approved_at = IsoDateTimeField(allow_null=True)
    created_at = IsoDateTimeField()
    refund_count = serializers.IntegerField(help_text="Refunds applied to the sale so far")
    refund_reason = serializers.CharField(help_text="The reason the latest refund gave (empty when none)")
    held_at = IsoDateTimeField(
        allow_null=True, help_text="When the owner put it on hold (it is not approved until released); null if not"
    )
    hold_reason = serializers.CharField(help_text="Why it is on hold (empty when none was given or not held)")
    voided_at = IsoDateTimeField(allow_null=True, help_text="When the owner voided it; null if not")
    void_reason = serializers.CharField(help_text="Why it was voided (empty unless voided)")
    flags = serializers.ListField(
        child=serializers.ChoiceField(choices=Rule.choices),
        help_text="The fraud rules that fired on its sale (whether or not they hold it)",
    )
    hold_rule = serializers.CharField(
        help_text="The fraud rule that holds it; empty when an owner held it or it is not on hold"
    )


class AgentLedgerEntrySerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    kind = serializers.ChoiceField(choices=LedgerEntry.Kind.choices)
    amount_cents = serializers.IntegerField(help_text="Signed: a credit adds, a clawback subtracts")
    currency = serializers.CharField()
    memo = serializers.CharField()
    created_at = IsoDateTimeField()


# One refund applied (its commissions.models.NotificationOutbox row).
class AgentCommissionRefundStepSerializer(serializers.Serializer[Any]):
    step = serializers.IntegerField(source="refund_step", help_text="1 for the first refund applied, then 2, ...")
    reason = serializers.CharField(
        source="refund_reason", help_text="The reason on record when this refund was applied"
    )
    reversed = serializers.BooleanField(help_text="This refund reversed the commission (the whole sale refunded)")
    was_paid_out = serializers.BooleanField(
        help_text="The commission had been paid out when refunded: `paid`, or covered by a payout already exported, "
        "sent or paid (the advertiser is told to review it)"
    )
    created_at = IsoDateTimeField()


# The stored refund bookkeeping of a commission (agent_api.selectors.CommissionDetail).
class AgentCommissionRefundsSerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField(
        source="refund_count", help_text="Refunds applied (retries that were skipped are not counted)"
    )
    sale_refunded_cents = serializers.IntegerField(help_text="How much of the sale was refunded, in its currency")
    deducted_cents = serializers.IntegerField(
        help_text="The commission's share of those refunds (taken from the balance only if it was credited)"
    )
    refund_ids = serializers.ListField(
        source="applied_refund_ids",
        child=serializers.CharField(),
        help_text="The refund ids callers sent, in the order applied",
    )
    anonymous_amounts_cents = serializers.ListField(
        source="applied_anonymous_amounts",
        child=serializers.IntegerField(),
        help_text="Amounts of the refunds sent without a refund id, in order",
    )
    steps = AgentCommissionRefundStepSerializer(source="refund_steps", many=True)


class AgentCommissionReviewSerializer(serializers.Serializer[Any]):
    action = serializers.ChoiceField(choices=CommissionReview.Action.choices)
    rule = serializers.CharField(help_text="The fraud rule behind the hold; empty for an owner's decision")
    reason = serializers.CharField()
    actor = serializers.CharField(
        help_text='Who decided: "rule", "user:<username>", "agent key <masked>" or "admin:<username>"'
    )
    created_at = IsoDateTimeField()


# A commission with its history (agent_api.selectors.CommissionDetail).
class AgentCommissionDetailSerializer(AgentCommissionSerializer):
    ledger = AgentLedgerEntrySerializer(many=True)
    refunds = AgentCommissionRefundsSerializer(source="*")
    reviews = AgentCommissionReviewSerializer(many=True)


AgentCommissionListSerializer = page_serializer("AgentCommissionList", AgentCommissionSerializer)
AgentCommissionResultSerializer = result_serializer("AgentCommissionResult", AgentCommissionDetailSerializer())
AgentCommissionActionResultSerializer = result_serializer("AgentCommissionActionResult", AgentCommissionSerializer())
