"""Operators' view of payouts: runs with their audit trail, payouts read-only with the services' actions (so the
ledger moves only through payouts.services), payout accounts, and programs' minimums."""

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.ids import integer_parse

from .models import Payout, PayoutAccount, PayoutCommission, PayoutMinimum, PayoutRun, PayoutRunAudit, Rail
from .services import payout_mark_failed, payout_mark_paid
from .stripe_rail import payout_send

FAILED_BY_OPERATOR = "Marked failed by the operator"
MINIMUM_NOT_ASCII = "Enter a whole number in ASCII digits (the currency's minor units)."


def _actor(request: HttpRequest) -> str:
    return f"admin:{request.user.get_username()}"


class PayoutRunAuditInline(admin.TabularInline[PayoutRunAudit, PayoutRun]):
    model = PayoutRunAudit
    fields = ["created_at", "action", "actor", "detail"]
    readonly_fields = ["created_at", "action", "actor", "detail"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(PayoutRun)
class PayoutRunAdmin(admin.ModelAdmin[PayoutRun]):
    list_display = ["id", "program", "currency", "status", "minimum_cents", "created_at", "confirmed_at"]
    list_filter = ["status", "currency"]
    raw_id_fields = ["workspace", "program"]
    readonly_fields = [field.name for field in PayoutRun._meta.fields if field.name != "id"]
    inlines = [PayoutRunAuditInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs are previewed from the dashboard, the agent API or `manage.py payouts`

    def has_delete_permission(self, request: HttpRequest, obj: PayoutRun | None = None) -> bool:
        return False


class PayoutCommissionInline(admin.TabularInline[PayoutCommission, Payout]):
    model = PayoutCommission
    fields = ["commission", "amount_cents", "active"]
    readonly_fields = ["commission", "amount_cents", "active"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Payout)
class PayoutAdmin(admin.ModelAdmin[Payout]):
    """Read-only: status moves through the actions below (the services), each with its ledger entry."""

    list_display = ["id", "run", "partner", "amount_cents", "currency", "rail", "status", "created_at", "paid_at"]
    list_filter = ["status", "rail", "currency"]
    search_fields = ["=id", "=stripe_transfer_id", "destination"]
    raw_id_fields = ["run", "program", "partner"]
    readonly_fields = [field.name for field in Payout._meta.fields]
    inlines = [PayoutCommissionInline]
    actions = ["mark_paid", "mark_failed", "send_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Payout | None = None) -> bool:
        return False

    @admin.action(description="Mark selected manual payouts paid", permissions=["change"])
    def mark_paid(self, request: HttpRequest, queryset: QuerySet[Payout]) -> None:
        done = sum(
            payout_mark_paid(payout_id=payout.pk, actor=_actor(request))
            for payout in queryset.exclude(rail=Rail.STRIPE).order_by("pk")
        )
        self.message_user(request, f"Marked {done} payout(s) paid (Stripe payouts settle themselves)")

    @admin.action(description="Mark selected manual payouts failed (money back on the balance)", permissions=["change"])
    def mark_failed(self, request: HttpRequest, queryset: QuerySet[Payout]) -> None:
        done = sum(
            payout_mark_failed(
                payout_id=payout.pk, code="marked_failed", message=FAILED_BY_OPERATOR, actor=_actor(request)
            )
            for payout in queryset.exclude(rail=Rail.STRIPE).order_by("pk")
        )
        self.message_user(request, f"Marked {done} payout(s) failed")

    @admin.action(description="Send selected Stripe payouts now (same idempotency key)", permissions=["change"])
    def send_now(self, request: HttpRequest, queryset: QuerySet[Payout]) -> None:
        outcomes: dict[str, int] = {}
        for payout in queryset.filter(rail=Rail.STRIPE).order_by("pk"):
            try:
                outcome = payout_send(payout_id=payout.pk) or "nothing to send"
            except Exception as exc:  # a Stripe outage: the payout stays processing for the reconciler
                outcome = f"no answer ({type(exc).__name__})"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        summary = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items())) or "nothing"
        self.message_user(request, f"Sent: {summary}", messages.INFO)


@admin.register(PayoutAccount)
class PayoutAccountAdmin(admin.ModelAdmin[PayoutAccount]):
    list_display = ["account", "rail", "stripe_account_id", "transfers_active", "payouts_enabled", "updated_at"]
    list_filter = ["rail", "transfers_active"]
    search_fields = ["account__email", "=stripe_account_id", "payout_email"]
    raw_id_fields = ["account"]
    readonly_fields = [
        "stripe_account_id",
        "payouts_enabled",
        "transfers_active",
        "details_submitted",
        "requirements_due",
        "disabled_reason",
        "created_at",
        "updated_at",
    ]


class PayoutMinimumForm(forms.ModelForm[PayoutMinimum]):
    def clean_minimum_cents(self) -> int:
        # Django's IntegerField runs int() on the text, which reads other scripts' digits ("١" is 1).
        if integer_parse(self.data.get(self.add_prefix("minimum_cents"), "")) is None:
            raise forms.ValidationError(MINIMUM_NOT_ASCII)
        minimum: int = self.cleaned_data["minimum_cents"]
        return minimum


@admin.register(PayoutMinimum)
class PayoutMinimumAdmin(admin.ModelAdmin[PayoutMinimum]):
    form = PayoutMinimumForm
    list_display = ["program", "currency", "minimum_cents", "automatic"]
    list_filter = ["currency", "automatic"]
    raw_id_fields = ["program"]
