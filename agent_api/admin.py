from django.contrib import admin
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin

from .models import AgentAuditEntry, AgentIdempotencyRecord


@admin.register(AgentAuditEntry)
class AgentAuditEntryAdmin(ReadOnlyAdmin[AgentAuditEntry]):
    """Every write made through the agent API, read-only: the history is only ever appended to."""

    list_display = ["created_at", "workspace", "key_masked", "action", "object_type", "object_id"]
    list_filter = ["action", "object_type", "workspace"]
    search_fields = ["object_id", "key_masked", "request_id", "idempotency_key"]
    date_hierarchy = "created_at"
    list_select_related = ["workspace"]
    readonly_fields = [
        "created_at",
        "workspace",
        "key",
        "key_masked",
        "action",
        "object_type",
        "object_id",
        "before",
        "after",
        "request_id",
        "idempotency_key",
    ]


@admin.register(AgentIdempotencyRecord)
class AgentIdempotencyRecordAdmin(admin.ModelAdmin[AgentIdempotencyRecord]):
    list_display = ["created_at", "key", "idempotency_key", "status_code"]
    readonly_fields = ["created_at", "key", "idempotency_key", "request_digest", "status_code", "response_body"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AgentIdempotencyRecord | None = None) -> bool:
        return False
