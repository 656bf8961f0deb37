from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin
from programs.admin import WorkspaceChoicesAdmin

from .models import (
    ClickEvent,
    Customer,
    DailyRollup,
    LeadEvent,
    PageVisit,
    ProcessorEvent,
    RollupState,
    SaleEvent,
    TrackingLog,
)
from .stripe.services import processor_events_replay


@admin.register(Customer)
class CustomerAdmin(WorkspaceChoicesAdmin[Customer]):
    list_display = [
        "id",
        "click_id",
        "program",
        "customer_key",
        "customer_status",
        "first_partner",
        "is_test",
    ]
    list_filter = ["customer_status", "is_test"]
    search_fields = ["click_id", "customer_key", "email"]
    raw_id_fields = ["program", "first_partner", "first_link"]


@admin.register(ClickEvent)
class ClickEventAdmin(WorkspaceChoicesAdmin[ClickEvent]):
    list_display = [
        "id",
        "program",
        "partner",
        "click_id",
        "geo_country",
        "device_type",
        "browser_name",
        "click_timestamp",
        "traffic",
        "flags",
        "is_test",
    ]
    # traffic: duplicate, bot and prefetch clicks are recorded but not counted (fraud.rules.Traffic).
    list_filter = ["is_test", "traffic", "device_type"]
    search_fields = ["click_id"]
    raw_id_fields = ["program", "partner", "link", "customer"]


@admin.register(LeadEvent)
class LeadEventAdmin(WorkspaceChoicesAdmin[LeadEvent]):
    list_display = ["id", "program", "click_id", "customer_key", "provisional", "lead_timestamp", "is_test"]
    list_filter = ["provisional", "is_test"]
    search_fields = ["click_id", "customer_key", "email"]
    raw_id_fields = ["program", "customer", "partner"]


@admin.register(SaleEvent)
class SaleEventAdmin(WorkspaceChoicesAdmin[SaleEvent]):
    list_display = [
        "id",
        "program",
        "processor_event_id",
        "amount_cents",
        "currency",
        "sale_type",
        "attributed",
        "is_test",
        "sale_date",
    ]
    list_filter = ["currency", "sale_type", "is_test", "attributed", "provider"]
    search_fields = ["processor_event_id", "provider_payment_id", "click_id"]
    raw_id_fields = ["program", "customer", "partner"]

    # Read-only always, not only once a commission exists: every field feeds money even before one does. The
    # reconciler creates a missing commission from the stored amount, refunds are capped by it and clawed back
    # against it, revenue metrics sum it, product_id picks the commission rate, sale_date decides the attribution
    # window and the hold, the provider ids find the sale a Stripe refund belongs to. A sale records what the
    # program or Stripe reported; it is corrected by a refund through the API, never by an edit.
    def get_readonly_fields(self, request: HttpRequest, obj: SaleEvent | None = None) -> list[str]:
        return [field.name for field in SaleEvent._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sales are recorded by the sale path (dedupe, attribution, commission), never by hand


@admin.register(TrackingLog)
class TrackingLogAdmin(admin.ModelAdmin[TrackingLog]):
    list_display = ["id", "program", "event", "outcome", "is_test", "request_id", "created_at"]
    list_filter = ["event", "outcome", "is_test"]
    search_fields = ["request_id"]
    raw_id_fields = ["program"]


@admin.register(PageVisit)
class PageVisitAdmin(admin.ModelAdmin[PageVisit]):
    list_display = ["id", "program", "page_url", "referrer_domain", "utm_source", "click_id", "created_at"]
    list_filter = ["is_test"]
    search_fields = ["click_id", "page_url", "referrer_domain", "utm_source"]
    raw_id_fields = ["program"]


@admin.register(ProcessorEvent)
class ProcessorEventAdmin(admin.ModelAdmin[ProcessorEvent]):
    """Operators see every received payment event, what became of it, and can replay it."""

    list_display = ["id", "event_type", "event_id", "program", "status", "outcome", "attempts", "received_at"]
    list_filter = ["status", "event_type", "livemode"]
    search_fields = ["event_id", "account_id", "outcome"]
    raw_id_fields = ["program", "sale"]
    readonly_fields = [
        "provider",
        "event_id",
        "event_type",
        "account_id",
        "program",
        "livemode",
        "payload",
        "status",
        "outcome",
        "sale",
        "attempts",
        "last_error",
        "received_at",
        "processed_at",
    ]
    actions = ["replay"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Replay (process again; a payment already recorded is not counted twice)")
    def replay(self, request: HttpRequest, queryset: QuerySet[ProcessorEvent]) -> None:
        count = processor_events_replay(event_pks=queryset.values_list("pk", flat=True))
        messages.success(request, f"Queued {count} event(s) for processing.")


@admin.register(DailyRollup)
class DailyRollupAdmin(ReadOnlyAdmin[DailyRollup]):
    """Written only by the rollup task (tracking.rollups): an edit would make the reports disagree with a
    recount (`manage.py rollup verify`)."""

    list_display = ["program", "day", "is_test", "partner_id", "link_id", "clicks", "leads", "attributed_sales"]
    list_filter = ["is_test", "day"]
    search_fields = ["program__name"]
    list_select_related = ["program"]
    ordering = ["-day", "program_id", "partner_id", "link_id"]


@admin.register(RollupState)
class RollupStateAdmin(ReadOnlyAdmin[RollupState]):
    list_display = ["click_id", "lead_id", "sale_id", "generation", "changes_seen_at", "clicks_pruned_before"]
