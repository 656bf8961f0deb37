from django.contrib import admin

from .models import Commission, LedgerEntry, Notification, ProductCommissionRate, Withdrawal


@admin.register(Commission)
class CommissionAdmin(admin.ModelAdmin):
    """Read-mostly: status and money move only through services, so the ledger stays consistent."""

    list_display = [
        "id",
        "program",
        "partner",
        "amount_cents",
        "currency",
        "status",
        "credited",
        "deducted_cents",
        "hold_until",
    ]
    list_filter = ["status", "currency", "credited"]
    raw_id_fields = ["program", "partner", "sale", "customer"]
    readonly_fields = [
        "program",
        "partner",
        "sale",
        "customer",
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
        "approved_at",
        "created_at",
    ]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
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

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # append-only

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Withdrawal)
class WithdrawalAdmin(admin.ModelAdmin):
    list_display = ["id", "partner", "amount_cents", "requested_cents", "currency", "status", "created_at"]
    list_filter = ["status", "currency"]
    raw_id_fields = ["partner"]


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["id", "audience", "kind", "partner", "workspace", "commission", "created_at", "read_at"]
    list_filter = ["audience", "kind"]
    raw_id_fields = ["partner", "workspace", "commission"]


@admin.register(ProductCommissionRate)
class ProductCommissionRateAdmin(admin.ModelAdmin):
    list_display = ["id", "program", "product_id", "commission_type", "commission_rate"]
    search_fields = ["product_id"]
    raw_id_fields = ["program"]
