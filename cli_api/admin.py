from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from core.admin import ReadOnlyAdmin

from .models import CliLoginSession, CliTestFixture, CliTestRun, CliToken
from .services import cli_tokens_revoke


@admin.register(CliLoginSession)
class CliLoginSessionAdmin(ReadOnlyAdmin[CliLoginSession]):
    """Read-only: sessions are opened by `svc login` and closed by the service."""

    list_display = ["id", "user", "status_now", "created_at", "expires_at", "authenticated_at", "consumed_at"]
    list_filter = ["created_at"]
    search_fields = ["user__username", "user__email"]
    list_select_related = ["user"]
    exclude = ["state_digest"]

    @admin.display(description="Status")
    def status_now(self, obj: CliLoginSession) -> str:
        return obj.status()


@admin.register(CliToken)
class CliTokenAdmin(admin.ModelAdmin[CliToken]):
    """Tokens are issued by `svc login` only and shown there once; here they can be seen and revoked."""

    list_display = ["id", "masked", "user", "state", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at", "expires_at"]
    search_fields = ["user__username", "user__email", "last4"]
    list_select_related = ["user"]
    fields = ["masked", "user", "session", "created_at", "expires_at", "last_used_at", "revoked_at"]
    readonly_fields = ("masked", "user", "session", "created_at", "expires_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: CliToken | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: CliToken | None = None) -> bool:
        return False

    @admin.display(description="State")
    def state(self, obj: CliToken) -> str:
        if obj.revoked_at:
            return "revoked"
        return "active" if obj.is_usable(timezone.now()) else "expired"

    @admin.action(description="Revoke the selected tokens (they stop working at once)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[CliToken]) -> None:
        count = cli_tokens_revoke(queryset=queryset)
        self.message_user(request, f"Revoked {count} token(s).")


@admin.register(CliTestRun)
class CliTestRunAdmin(ReadOnlyAdmin[CliTestRun]):
    list_display = ["id", "program", "created_at", "run_id", "success"]
    list_filter = ["success"]
    list_select_related = ["program"]


@admin.register(CliTestFixture)
class CliTestFixtureAdmin(ReadOnlyAdmin[CliTestFixture]):
    list_display = ["id", "program", "partner", "link", "created_at", "refreshed_at"]
    list_select_related = ["program", "partner", "link"]
