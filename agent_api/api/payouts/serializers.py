"""What the payout routes read (query serializers) and answer (output serializers, which both render the bodies and
describe them in the OpenAPI document)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from commissions.models import Withdrawal
from core.api.fields import IsoDateTimeField

from ... import messages
from ...selectors import LEDGER_PROGRAMS, LEDGER_WHOLE
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer

# --- input ----------------------------------------------------------------------------------------------------------


class BalancesQuerySerializer(PageQuerySerializer):
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner")
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID,
        "Only the partners enrolled in this program, and only its ledger entries (404 when the key may not see it)",
    )


class WithdrawalsQuerySerializer(PageQuerySerializer):
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner")
    status = serializers.ChoiceField(
        choices=Withdrawal.Status.choices,
        required=False,
        error_messages={"invalid_choice": messages.WITHDRAWAL_STATUS_INVALID},
        help_text="Only withdrawals in this state",
    )


# --- output ---------------------------------------------------------------------------------------------------------


# agent_api.selectors.CurrencyBalance
class AgentPartnerCurrencyBalanceSerializer(serializers.Serializer):
    currency = serializers.CharField()
    balance_cents = serializers.IntegerField(
        help_text="The sum of the ledger entries read (see ledger_scope); negative when clawbacks exceed credits"
    )
    open_withdrawals_cents = serializers.IntegerField(
        help_text="What the partner's open withdrawals in this currency ask for (withdrawals have no program)"
    )


# agent_api.selectors.PartnerBalance
class AgentPartnerBalanceSerializer(serializers.Serializer):
    partner_id = serializers.IntegerField(source="partner.pk")
    partner_name = serializers.CharField(source="partner.name")
    ledger_scope = serializers.ChoiceField(
        choices=[
            (LEDGER_WHOLE, "The partner's whole ledger: what the partner can withdraw"),
            (LEDGER_PROGRAMS, "Only the entries of the key's programs (or program_id): credits and clawbacks"),
        ],
        help_text=f"`{LEDGER_WHOLE}`: every entry of the partner, so the balance is what the partner can withdraw. "
        f"`{LEDGER_PROGRAMS}`: the key is limited to some programs or program_id was given, so only the credits "
        "and refund clawbacks of those programs count; payouts and manual adjustments (which have no program) "
        "are left out",
    )
    balances = AgentPartnerCurrencyBalanceSerializer(
        many=True,
        help_text="One per currency with ledger entries or open withdrawals, by currency code; empty when none",
    )


# A withdrawal, with its partner (select_related).
class AgentWithdrawalSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    partner_id = serializers.IntegerField()
    partner_name = serializers.CharField(source="partner.name")
    amount_cents = serializers.IntegerField(
        help_text="What it pays: the requested amount, less what later refund clawbacks cut from an open one"
    )
    requested_cents = serializers.IntegerField(help_text="What the partner asked for")
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=Withdrawal.Status.choices)
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField(help_text="The last change (amount cut, paid or cancelled)")
    paid_at = serializers.SerializerMethodField(
        allow_null=True,
        help_text="When it was paid (a paid withdrawal never changes again); null unless paid",
    )

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_paid_at(self, withdrawal: Withdrawal) -> str | None:
        # Marking paid is the last write a withdrawal gets (the clawback cut and cancelling touch open ones only).
        return withdrawal.updated_at.isoformat() if withdrawal.status == Withdrawal.Status.PAID else None


AgentPartnerBalanceListSerializer = page_serializer("AgentPartnerBalanceList", AgentPartnerBalanceSerializer)
AgentWithdrawalListSerializer = page_serializer("AgentWithdrawalList", AgentWithdrawalSerializer)
AgentWithdrawalResultSerializer = result_serializer("AgentWithdrawalResult", AgentWithdrawalSerializer())
