from typing import TypeVar

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from core.models import IntegrityRun

ModelT = TypeVar("ModelT", bound=Model)


class ReadOnlyAdmin(admin.ModelAdmin[ModelT]):
    """An admin that lists and shows rows but never adds, changes or deletes them: rows only the service itself
    writes (audit trails, rollups), where an edit by hand would break what they stand for."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ModelT | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ModelT | None = None) -> bool:
        return False


@admin.register(IntegrityRun)
class IntegrityRunAdmin(ReadOnlyAdmin[IntegrityRun]):
    """The integrity runs (core.integrity): beat's daily run and those recorded by `manage.py verify_integrity
    --record`. Only the service writes them."""

    list_display = ("started_at", "passed", "checks", "failed_checks", "seconds")
    list_filter = ("passed",)
    date_hierarchy = "started_at"
    fields = ("started_at", "passed", "checks", "seconds", "failures_shown")
    readonly_fields = fields

    @admin.display(description="failed checks")
    def failed_checks(self, run: IntegrityRun) -> str:
        return ", ".join(f"{failure['check']} ({failure['count']})" for failure in run.failures) or "-"

    @admin.display(description="failures")
    def failures_shown(self, run: IntegrityRun) -> str:
        return (
            "\n".join(
                f"{failure['check']}: {failure['count']} {failure['noun']} {failure['title']}: "
                + ", ".join(str(ref) for ref in failure["examples"])
                for failure in run.failures
            )
            or "none"
        )
