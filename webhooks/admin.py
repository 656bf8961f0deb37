from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from .services import WebhookRefused, delivery_resend, endpoint_rotate_secret, endpoint_update

EDITABLE = ("url", "description", "event_types", "enabled", "include_test_events")
# An endpoint's form shows these around EDITABLE, read only: whose it is, and the state the services keep.
OWNER = ("workspace", "program")
STATE = (
    "secret_last4",
    "previous_secret_expires_at",
    "disabled_at",
    "disabled_reason",
    "failing_since",
    "consecutive_failures",
    "created_at",
)


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin[WebhookEndpoint]):
    """Endpoints are made on the dashboard or through the agent API (which show the secret once); here an
    operator can change, disable or rotate one, always through the services (URL and type checks, rotation
    overlap). The secret itself is never shown, only its last four characters."""

    list_display = ["id", "url", "workspace", "program", "enabled", "disabled_reason", "consecutive_failures"]
    list_filter = ["enabled", "include_test_events"]
    search_fields = ["url", "description"]
    raw_id_fields = ["workspace", "program"]
    fields = [*OWNER, *EDITABLE, *STATE]
    readonly_fields = [*OWNER, *STATE]
    actions = ["rotate_secret"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form: Any, change: bool) -> None:
        changes = {name: form.cleaned_data[name] for name in EDITABLE if name in form.changed_data}
        try:
            endpoint_update(endpoint_id=obj.pk, changes=changes)
        except WebhookRefused as refused:
            self.message_user(request, str(refused), messages.ERROR)

    @admin.action(description="Rotate the signing secret (the new one is shown once)")
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            rotated = endpoint_rotate_secret(endpoint_id=endpoint.pk)
            self.message_user(
                request,
                f"Endpoint #{endpoint.pk}: new secret {rotated.secret} (shown once; the old one keeps signing "
                f"until {rotated.endpoint.previous_secret_expires_at:%Y-%m-%d %H:%M} UTC).",
                messages.WARNING,
            )


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdmin[WebhookEvent]):
    list_display = ["public_id", "type", "program", "livemode", "synthetic", "created_at", "fanned_out_at"]
    list_filter = ["type", "livemode", "synthetic"]
    search_fields = ["public_id"]
    raw_id_fields = ["program"]


class WebhookAttemptInline(admin.TabularInline[WebhookAttempt, WebhookDelivery]):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "number",
        "manual",
        "started_at",
        "status_code",
        "latency_ms",
        "error",
        "response_excerpt",
    )

    def has_add_permission(self, request: HttpRequest, obj: WebhookDelivery | None = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin[WebhookDelivery]):
    list_display = ["id", "event", "endpoint", "status", "attempts", "last_status_code", "next_attempt_at"]
    list_filter = ["status"]
    raw_id_fields = ["event", "endpoint"]
    inlines = [WebhookAttemptInline]
    actions = ["resend"]

    @admin.action(description="Resend now (same event id, fresh retry schedule)")
    def resend(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        resent = 0
        for delivery in queryset:
            try:
                resent += delivery_resend(delivery_id=delivery.pk)
            except WebhookRefused as refused:
                self.message_user(request, f"Delivery #{delivery.pk}: {refused}", messages.ERROR)
        self.message_user(request, f"{resent} delivery(ies) queued again.")
