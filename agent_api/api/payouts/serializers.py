"""What the payout routes read (query serializers) and answer (output serializers, which both render the bodies and
describe them in the OpenAPI document)."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from commissions.models import Withdrawal
from core.api.fields import AsciiIntegerField, IsoDateTimeField
from core.currency import Currency
from core.ids import MAX_BIGINT
from payouts.models import Payout, PayoutRun, PayoutRunAudit, PayoutStatus, Rail
from payouts.selectors import ClawedBack, clawbacks_after_sending

from ... import messages
from ...selectors import LEDGER_PROGRAMS, LEDGER_WHOLE
from ..base import id_filter
from ..pagination import PageQuerySerializer
from ..serializers import page_serializer, result_serializer
from . import messages as payout_messages

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


CURRENCIES = ", ".join(Currency.values)


def _choice(choices: list[tuple[str, str]], message: str, help_text: str) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=choices,
        required=False,
        error_messages={"invalid_choice": message},
        help_text=help_text,
    )


class RunsQuerySerializer(PageQuerySerializer):
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID, "Only this program's runs (404 when the key may not see it)"
    )
    currency = _choice(
        Currency.choices,
        payout_messages.RUN_CURRENCY_FILTER_INVALID.format(known=CURRENCIES),
        "Only runs in this currency",
    )
    status = _choice(PayoutRun.Status.choices, payout_messages.RUN_STATUS_INVALID, "Only runs in this state")


class RunPreviewSerializer(serializers.Serializer[Any]):
    program_id = AsciiIntegerField(
        min_value=1,
        max_value=MAX_BIGINT,
        help_text="The program whose partners are paid (404 when the key may not see it)",
        error_messages={
            key: payout_messages.RUN_PROGRAM_ID_INVALID
            for key in ("required", "invalid", "null", "min_value", "max_value", "max_string_length")
        },
    )
    currency = serializers.ChoiceField(
        choices=Currency.choices,
        help_text="Every currency pays separately, in its own minor units",
        error_messages={
            key: payout_messages.RUN_CURRENCY_INVALID.format(known=CURRENCIES)
            for key in ("required", "null", "invalid_choice")
        },
    )
    minimum_cents = AsciiIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_BIGINT,
        help_text="Pay only partners owed at least this much (minor units); the program's minimum payout in the "
        "currency when omitted (0 when none is set)",
        error_messages={
            key: payout_messages.RUN_MINIMUM_INVALID
            for key in ("invalid", "null", "min_value", "max_value", "max_string_length")
        },
    )


class PayoutsQuerySerializer(PageQuerySerializer):
    program_id = id_filter(
        messages.PROGRAM_ID_FILTER_INVALID, "Only this program's payouts (404 when the key may not see it)"
    )
    run_id = id_filter(
        payout_messages.RUN_ID_FILTER_INVALID, "Only the payouts of this run (404 when the key may not see it)"
    )
    partner_id = id_filter(messages.PARTNER_ID_FILTER_INVALID, "Only this partner's payouts")
    status = _choice(PayoutStatus.choices, payout_messages.PAYOUT_STATUS_INVALID, "Only payouts in this state")


class PayoutMarkPaidSerializer(serializers.Serializer[Any]):
    reference = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The rail's own reference for the payment (PayPal or Wise transaction id)",
        error_messages={key: payout_messages.REFERENCE_INVALID for key in ("null", "invalid", "max_length")},
    )


class PayoutMarkFailedSerializer(serializers.Serializer[Any]):
    message = serializers.CharField(
        max_length=500,
        help_text="Why it failed, in words for the partner (they are emailed it)",
        error_messages={
            key: payout_messages.FAILURE_MESSAGE_INVALID
            for key in ("required", "null", "invalid", "blank", "max_length")
        },
    )
    code = serializers.CharField(
        required=False,
        max_length=100,
        help_text='A short code of the failure for your records (default "manual")',
        error_messages={
            key: payout_messages.FAILURE_CODE_INVALID for key in ("null", "invalid", "blank", "max_length")
        },
    )


# --- output ---------------------------------------------------------------------------------------------------------


# agent_api.selectors.CurrencyBalance
class AgentPartnerCurrencyBalanceSerializer(serializers.Serializer[Any]):
    currency = serializers.CharField()
    balance_cents = serializers.IntegerField(
        help_text="The sum of the ledger entries read (see ledger_scope); negative when clawbacks exceed credits"
    )
    open_withdrawals_cents = serializers.IntegerField(
        help_text="What the partner's open withdrawals in this currency ask for (withdrawals have no program)"
    )


# agent_api.selectors.PartnerBalance
class AgentPartnerBalanceSerializer(serializers.Serializer[Any]):
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
class AgentWithdrawalSerializer(serializers.Serializer[Any]):
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


# payouts.services.PreviewLine.as_dict, as stored on the run.
class AgentPayoutRunLineSerializer(serializers.Serializer[Any]):
    partner_id = serializers.IntegerField()
    partner = serializers.CharField(help_text="The partner's name when the run was previewed")
    amount_cents = serializers.IntegerField(help_text="What was available to pay the partner at the preview")
    rail = serializers.ChoiceField(
        choices=[*Rail.choices, ("", "No payout account")], help_text='How the partner is paid ("": not set up)'
    )
    ready = serializers.BooleanField(help_text="Whether the partner can be paid now (confirming pays only these)")
    reason = serializers.CharField(help_text='Why the partner cannot be paid now ("" when ready)')


class AgentPayoutRunAuditSerializer(serializers.Serializer[Any]):
    action = serializers.ChoiceField(choices=PayoutRunAudit.Action.choices)
    actor = serializers.CharField(help_text='Who: "user:<username>", "agent key <masked>", "command" or "schedule"')
    detail = serializers.CharField()
    created_at = IsoDateTimeField()


# payouts.selectors.ClawedBack
class AgentPayoutClawbackSerializer(serializers.Serializer[Any]):
    commission_id = serializers.IntegerField(help_text="The commission it covered, refunded after it was sent")
    amount_cents = serializers.IntegerField(help_text="What the refund took back from the partner (positive)")
    memo = serializers.CharField(help_text='The ledger entry\'s words, e.g. "Refund of sale #12 (50.00 USD)"')
    created_at = IsoDateTimeField(help_text="When it was recorded")


# A payout, with its partner (select_related) and the commissions it covers (prefetched `covered`, active rows). The
# clawbacks after sending come from context["clawbacks"] (clawbacks_after_sending over the page: one read), else are
# read for the payout alone (none when it has not left).
class AgentPayoutSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    run_id = serializers.IntegerField()
    program_id = serializers.IntegerField()
    partner_id = serializers.IntegerField()
    partner_name = serializers.CharField(source="partner.name")
    amount_cents = serializers.IntegerField(
        help_text="What it pays, in the currency's minor units (a refund before it was sent may have reduced it)"
    )
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=PayoutStatus.choices)
    rail = serializers.ChoiceField(choices=Rail.choices)
    destination = serializers.CharField(
        help_text="Where it goes: the connected Stripe account, or the PayPal/Wise email or bank reference"
    )
    stripe_transfer_id = serializers.CharField(help_text='The Stripe transfer ("" until sent, or on a manual rail)')
    rail_reference = serializers.CharField(help_text="The manual rail's reference given when it was marked paid")
    failure_code = serializers.CharField()
    failure_message = serializers.CharField(help_text="Why it failed, as the partner was told")
    created_at = IsoDateTimeField()
    sent_at = IsoDateTimeField(allow_null=True, help_text="When it was sent (Stripe) or exported (manual rails)")
    paid_at = IsoDateTimeField(allow_null=True)
    failed_at = IsoDateTimeField(allow_null=True)
    commission_ids = serializers.SerializerMethodField(help_text="The commissions it covers (its statement)")
    clawed_back_after_sending = serializers.SerializerMethodField(
        help_text="Refunds of the commissions it covers recorded after it left (exported or sent to Stripe, or paid), "
        "oldest first: the money had gone, so each was taken from the partner's balance (the next run nets it) and "
        "the advertiser was warned to review it. Empty while it is pending, and once it failed or was cancelled"
    )

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_commission_ids(self, payout: Payout) -> list[int]:
        return [row.commission_id for row in payout.covered.all() if row.active]

    @extend_schema_field(AgentPayoutClawbackSerializer(many=True))
    def get_clawed_back_after_sending(self, payout: Payout) -> list[dict[str, object]]:
        found: dict[int, list[ClawedBack]] | None = self.context.get("clawbacks")
        if found is None:
            found = clawbacks_after_sending([payout])
        return [AgentPayoutClawbackSerializer(clawback).data for clawback in found.get(payout.pk, [])]


# A run, with its audit trail and payouts prefetched.
class AgentPayoutRunSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    program_id = serializers.IntegerField()
    currency = serializers.CharField()
    minimum_cents = serializers.IntegerField(help_text="Partners owed less than this were left out")
    status = serializers.ChoiceField(choices=PayoutRun.Status.choices)
    total_cents = serializers.SerializerMethodField(help_text="What the ready lines add up to")
    lines = AgentPayoutRunLineSerializer(many=True, help_text="The preview as shown, by partner name")
    payouts = AgentPayoutSerializer(
        many=True, help_text="The payouts confirming made, one per ready partner (empty in preview)"
    )
    audit = AgentPayoutRunAuditSerializer(many=True, help_text="Who previewed, confirmed, exported or marked it")
    created_at = IsoDateTimeField()
    confirmed_at = IsoDateTimeField(allow_null=True)

    def get_total_cents(self, run: PayoutRun) -> int:
        return sum(line["amount_cents"] for line in run.lines if line["ready"])


AgentPartnerBalanceListSerializer = page_serializer("AgentPartnerBalanceList", AgentPartnerBalanceSerializer)
AgentWithdrawalListSerializer = page_serializer("AgentWithdrawalList", AgentWithdrawalSerializer)
AgentWithdrawalResultSerializer = result_serializer("AgentWithdrawalResult", AgentWithdrawalSerializer())
AgentPayoutRunListSerializer = page_serializer("AgentPayoutRunList", AgentPayoutRunSerializer)
AgentPayoutRunResultSerializer = result_serializer("AgentPayoutRunResult", AgentPayoutRunSerializer())
AgentPayoutListSerializer = page_serializer("AgentPayoutList", AgentPayoutSerializer)
AgentPayoutResultSerializer = result_serializer("AgentPayoutResult", AgentPayoutSerializer())
