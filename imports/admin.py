"""The imports in the admin, read-only: they are written by the engine only (manage.py import, the dashboard's Import
page)."""

from django.contrib import admin

from core.admin import ReadOnlyAdmin

from .models import ImportedRecord, ImportRun


@admin.register(ImportRun)
class ImportRunAdmin(ReadOnlyAdmin[ImportRun]):
    list_display = ["id", "program", "platform", "state_now", "batches_done", "started_at", "finished_at", "actor"]
    list_filter = ["platform", "status", "started_at"]
    search_fields = ["program__name", "files_digest"]
    list_select_related = ["program", "actor"]

    @admin.display(description="State")
    def state_now(self, obj: ImportRun) -> str:
        return obj.state


@admin.register(ImportedRecord)
class ImportedRecordAdmin(ReadOnlyAdmin[ImportedRecord]):
    list_display = ["id", "program", "platform", "kind", "source_id", "object_id", "created", "run", "created_at"]
    list_filter = ["platform", "kind", "created"]
    search_fields = ["source_id"]
    list_select_related = ["program"]
