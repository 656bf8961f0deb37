from django.contrib import admin

from .models import ClickEvent, Customer, LeadEvent, SaleEvent, TrackingLog


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
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
class ClickEventAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "program",
        "partner",
        "click_id",
        "geo_country",
        "device_type",
        "browser_name",
        "click_timestamp",
        "is_test",
    ]
    list_filter = ["is_test", "device_type"]
    search_fields = ["click_id"]
    raw_id_fields = ["program", "partner", "link", "customer"]


@admin.register(LeadEvent)
class LeadEventAdmin(admin.ModelAdmin):
    list_display = ["id", "program", "click_id", "customer_key", "provisional", "lead_timestamp", "is_test"]
    list_filter = ["provisional", "is_test"]
    search_fields = ["click_id", "customer_key", "email"]
    raw_id_fields = ["program", "customer", "partner"]


@admin.register(SaleEvent)
class SaleEventAdmin(admin.ModelAdmin):
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


@admin.register(TrackingLog)
class TrackingLogAdmin(admin.ModelAdmin):
    list_display = ["id", "program", "event", "outcome", "is_test", "request_id", "created_at"]
    list_filter = ["event", "outcome", "is_test"]
    search_fields = ["request_id"]
    raw_id_fields = ["program"]
