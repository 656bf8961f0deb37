"""Partner applications in Django admin: the decisions go through the portal's own services, as on the dashboard."""

from typing import Any

from django.contrib import admin
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest

from programs.models import PartnerApplication

from .services import ApplicationDecided, application_approve, application_reject


def _staff(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


_APPLICATION_FIELDS = (
    "program",
    "name",
    "email",
    "website",
    "promotion",
    "status",
    "partner",
    "decided_by",
    "decided_at",
)


@admin.register(PartnerApplication)
class PartnerApplicationAdmin(admin.ModelAdmin[PartnerApplication]):
    """Applications from programs' public pages (/join/<id>). Read-only: decisions go through the actions, which
    are the dashboard's (approval emails the applicant an invitation to the portal; rejection sends nothing)."""

    list_display = ["email", "name", "program", "status", "created_at", "decided_at", "decided_by"]
    list_filter = ["status", "program"]
    search_fields = ["email", "name"]
    fields = _APPLICATION_FIELDS
    readonly_fields = _APPLICATION_FIELDS
    actions = ["approve_selected", "reject_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sent from the program's public page

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The list (and its actions) for those who may change; a single application is shown, never edited.
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Approve selected applications (emails each an invitation)", permissions=["change"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[PartnerApplication]) -> None:
        approved = skipped = 0
        for application in queryset:
            try:
                application_approve(application=application, decided_by=_staff(request), request=request)
                approved += 1
            except ApplicationDecided:
                skipped += 1
        self.message_user(
            request,
            f"Approved {approved} application(s)." + (f" {skipped} were decided already." if skipped else ""),
        )

    @admin.action(description="Reject selected applications (no email)", permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[PartnerApplication]) -> None:
        rejected = skipped = 0
        for application in queryset:
            try:
                application_reject(application=application, decided_by=_staff(request))
                rejected += 1
            except ApplicationDecided:
                skipped += 1
        self.message_user(
            request,
            f"Rejected {rejected} application(s)." + (f" {skipped} were decided already." if skipped else ""),
        )
