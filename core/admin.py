from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """An admin that lists and shows rows but never adds, changes or deletes them: rows only the service itself
    writes (audit trails, rollups), where an edit by hand would break what they stand for."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
