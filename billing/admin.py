from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import BillingConnection, BillingEvent


@admin.register(BillingConnection)
class BillingConnectionAdmin(admin.ModelAdmin[BillingConnection]):
    list_display = ("program", "platform", "environment", "is_active", "last_event_at", "signature_failures")
    list_filter = ("platform", "environment", "is_active")
    search_fields = ("program__name",)
    # Secrets are set through the dashboard's connection page, never shown or typed here.
    exclude = ("secret_encrypted", "previous_secret_encrypted", "api_key_encrypted")
    readonly_fields = (
        "program",
        "platform",
        "token",
        "secret_hint",
        "previous_secret_expires_at",
        "signature_failures",
        "last_signature_failure_at",
        "last_signature_failure",
        "last_event_at",
        "created_at",
        "updated_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(BillingEvent)
class BillingEventAdmin(admin.ModelAdmin[BillingEvent]):
    list_display = ("event_type", "event_id", "program", "platform", "status", "outcome", "received_at")
    list_filter = ("platform", "status", "livemode")
    search_fields = ("event_id", "event_type")
    raw_id_fields = ("sale",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in BillingEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
