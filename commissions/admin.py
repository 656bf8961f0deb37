from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from programs.admin import WorkspaceChoicesAdmin

from .approval import CommissionNotApprovable, commission_approve_early
from .models import (
    Commission,
    CommissionReview,
    LedgerEntry,
    Notification,
    NotificationOutbox,
    ProductCommissionRate,
    Withdrawal,
)
from .outbox import notification_outbox_deliver
from .selectors import commissions_with_money
from .services import (
    CommissionActionRefused,
    commission_hold,
    commission_release,
    commission_void,
    withdrawal_cancel,
    withdrawal_mark_paid,
)

if TYPE_CHECKING:
    from .selectors import CommissionWithMoney


def _actor(request: HttpRequest) -> str:
    """Who decided, as the commission's review entries name an operator."""
    return f"admin:{request.user.get_username()}"


class CommissionReviewInline(admin.TabularInline[CommissionReview, Commission]):
    """The commission's hold decisions, as written by the services: read only."""

    model = CommissionReview
    fields = ("created_at", "action", "rule", "reason", "actor")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Commission | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Commission | None = None) -> bool:
        return False


@admin.register(Commission)
class CommissionAdmin(WorkspaceChoicesAdmin[Commission]):
    """Read-mostly: status and money move only through services, so the ledger stays consistent. A commission a
    fraud rule held is released or voided here with the actions below (each writes its review and ledger entry)."""

    inlines = [CommissionReviewInline]

    list_display = [
        "id",
        "program",
        "partner",
        "kind",
        "group",
        "amount_cents",
        "currency",
        "status",
        "credited",
        "payable",
        "clawed_back",
        "hold_until",
        "held_at",
        "hold_rule",
    ]
    list_filter = ["status", "kind", "currency", "credited", ("held_at", admin.EmptyFieldListFilter), "hold_rule"]
    raw_id_fields = ["program", "partner", "sale", "customer"]
    readonly_fields = [
        "program",
        "partner",
        "sale",
        "customer",
        "kind",
        "group",
        "commission_type",
        "commission_rate",
        "amount_cents",
        "currency",
        "status",
        "credited",
        "sale_refunded_cents",
        "deducted_cents",
        "refund_reason",
        "applied_refund_ids",
        "applied_anonymous_amounts",
        "refund_count",
        "hold_until",
        "held_at",
        "hold_rule",
        "hold_reason",
        "flags",
        "approved_at",
        "voided_at",
        "void_reason",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Commission | None = None) -> bool:
        return False  # a commission leaves only through a refund, which keeps the ledger and the partner told

    # The owner actions of the agent API, through the same services.
    actions = ["approve_now", "hold", "release", "void"]

    @admin.action(description="Approve selected pending commissions now (credits the partner)", permissions=["change"])
    def approve_now(self, request: HttpRequest, queryset: QuerySet[Commission]) -> None:
        self._act(request, queryset, lambda pk: commission_approve_early(commission_id=pk), "Approved")

    @admin.action(description="Place selected pending commissions on hold", permissions=["change"])
    def hold(self, request: HttpRequest, queryset: QuerySet[Commission]) -> None:
        reason = f"Held in admin by {request.user.get_username()}"
        self._act(
            request,
            queryset,
            lambda pk: commission_hold(commission_id=pk, reason=reason, actor=_actor(request)),
            "Held",
        )

    @admin.action(description="Release selected commissions from hold", permissions=["change"])
    def release(self, request: HttpRequest, queryset: QuerySet[Commission]) -> None:
        self._act(request, queryset, lambda pk: commission_release(commission_id=pk, actor=_actor(request)), "Released")

    @admin.action(description="Void selected commissions (takes back what they credited)", permissions=["change"])
    def void(self, request: HttpRequest, queryset: QuerySet[Commission]) -> None:
        reason = f"Voided in admin by {request.user.get_username()}"
        self._act(
            request,
            queryset,
            lambda pk: commission_void(commission_id=pk, reason=reason, actor=_actor(request)),
            "Voided",
        )

    def _act(
        self,
        request: HttpRequest,
        queryset: QuerySet[Commission],
        action: Callable[[int], Commission],
        verb: str,
    ) -> None:
        done, refused = 0, []
        for pk in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                changed = action(pk)
                done += 1
            except (CommissionActionRefused, CommissionNotApprovable):
                refused.append(f"#{pk}")
                continue
            # The admin's own history of the object (the review log and the ledger have the service's record).
            self.log_change(request, changed, verb)
        text = f"{verb} {done} commission(s)"
        if refused:
            text += f"; refused for {', '.join(refused)} (their status does not allow it)"
        self.message_user(request, text + ".", messages.WARNING if refused else messages.SUCCESS)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Commission]:
        return commissions_with_money(super().get_queryset(request))

    @admin.display(description="still pays", ordering="payable_cents")
    def payable(self, commission: "CommissionWithMoney") -> int:
        return commission.payable_cents

    @admin.display(description="clawed back", ordering="clawed_back_cents")
    def clawed_back(self, commission: "CommissionWithMoney") -> int:
        return commission.clawed_back_cents


@admin.register(LedgerEntry)
class LedgerEntryAdmin(WorkspaceChoicesAdmin[LedgerEntry]):
    list_display = [
        "id",
        "partner",
        "program",
        "kind",
        "amount_cents",
        "currency",
        "commission",
        "created_at",
    ]
    list_filter = ["kind", "currency"]
    raw_id_fields = ["partner", "program", "commission"]

    def has_change_permission(self, request: HttpRequest, obj: LedgerEntry | None = None) -> bool:
        return False  # append-only

    def has_delete_permission(self, request: HttpRequest, obj: LedgerEntry | None = None) -> bool:
        return False


@admin.register(Withdrawal)
class WithdrawalAdmin(admin.ModelAdmin[Withdrawal]):
    """Read-only rows with two actions: paying writes the payout ledger entry and marks the commissions it
    covers paid, so status moves only through the services. Partners request withdrawals (the balance check
    lives in `withdrawal_request`); the admin neither adds nor deletes them."""

    list_display = ["id", "partner", "amount_cents", "requested_cents", "currency", "status", "created_at"]
    list_filter = ["status", "currency"]
    raw_id_fields = ["partner"]
    readonly_fields = ["partner", "amount_cents", "requested_cents", "currency", "status", "created_at", "updated_at"]
    actions = ["mark_paid", "cancel"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Withdrawal | None = None) -> bool:
        return False

    @admin.action(description="Mark selected withdrawals paid (writes the payout ledger entry)", permissions=["change"])
    def mark_paid(self, request: HttpRequest, queryset: QuerySet[Withdrawal]) -> None:
        self._apply(request, queryset, withdrawal_mark_paid, "Marked {done} withdrawal(s) paid")

    @admin.action(description="Cancel selected withdrawals", permissions=["change"])
    def cancel(self, request: HttpRequest, queryset: QuerySet[Withdrawal]) -> None:
        self._apply(request, queryset, withdrawal_cancel, "Cancelled {done} withdrawal(s)")

    def _apply(
        self,
        request: HttpRequest,
        queryset: QuerySet[Withdrawal],
        service: Callable[..., bool],
        done_message: str,
    ) -> None:
        done = skipped = 0
        for withdrawal in queryset.order_by("pk"):
            if service(withdrawal=withdrawal):
                done += 1
            else:
                skipped += 1
        text = done_message.format(done=done)
        if skipped:
            text += f"; {skipped} skipped (no longer open)"
        self.message_user(request, text + ".", messages.WARNING if skipped else messages.SUCCESS)


@admin.register(Notification)
class NotificationAdmin(WorkspaceChoicesAdmin[Notification]):
    list_display = ["id", "audience", "kind", "partner", "workspace", "commission", "created_at", "read_at"]
    list_filter = ["audience", "kind"]
    raw_id_fields = ["partner", "workspace", "commission"]


class DeliveryFilter(admin.SimpleListFilter):
    title = "delivery"
    parameter_name = "delivery"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("undelivered", "Undelivered"), ("delivered", "Delivered")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[NotificationOutbox]) -> QuerySet[NotificationOutbox]:
        if self.value() in ("undelivered", "delivered"):
            return queryset.filter(delivered_at__isnull=self.value() == "undelivered")
        return queryset


@admin.register(NotificationOutbox)
class NotificationOutboxAdmin(admin.ModelAdmin[NotificationOutbox]):
    """Refund notifications waiting for delivery. Rows change only through delivery (the action here, the
    beat sweep or `manage.py deliver_notifications`), so a row is never delivered twice."""

    list_display = [
        "id",
        "commission",
        "refund_step",
        "was_paid_out",
        "reversed",
        "created_at",
        "delivered_at",
        "attempts",
        "last_error",
    ]
    list_filter = [DeliveryFilter, "was_paid_out"]
    raw_id_fields = ["commission"]
    readonly_fields = [
        "commission",
        "refund_step",
        "was_paid_out",
        "reversed",
        "refund_reason",
        "created_at",
        "delivered_at",
        "attempts",
        "last_error",
    ]
    actions = ["deliver_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Deliver selected notifications now")
    def deliver_now(self, request: HttpRequest, queryset: QuerySet[NotificationOutbox]) -> None:
        delivered = failed = 0
        for outbox_id in queryset.filter(delivered_at__isnull=True).values_list("pk", flat=True):
            try:
                delivered += notification_outbox_deliver(outbox_id=outbox_id)
            except Exception as error:
                failed += 1
                self.message_user(request, f"Outbox row #{outbox_id} failed: {error}", messages.ERROR)
        level = messages.WARNING if failed else messages.SUCCESS
        self.message_user(request, f"Delivered {delivered} row(s); {failed} failed.", level)


@admin.register(ProductCommissionRate)
class ProductCommissionRateAdmin(admin.ModelAdmin[ProductCommissionRate]):
    list_display = ["id", "program", "group", "product_id", "commission_type", "commission_rate"]
    search_fields = ["product_id"]
    raw_id_fields = ["program", "group"]
