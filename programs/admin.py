from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import transaction
from django.template.response import TemplateResponse
from django.utils import timezone

from .models import (
    AgentKey,
    Membership,
    Partner,
    PartnerProgram,
    Program,
    ProgramKey,
    ReferralLink,
    Workspace,
)
from .services import agent_key_issue, program_key_mark_rotation, program_key_regenerate


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "is_blocked", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["id", "workspace", "user", "role", "is_active"]
    list_filter = ["role", "is_active"]
    search_fields = ["user__username", "workspace__name"]


class ProgramKeyInline(admin.TabularInline):
    model = ProgramKey
    extra = 0
    can_delete = False
    fields = ["mode", "masked", "created_at", "rotation_marked_at", "rotation_deadline"]
    readonly_fields = ["mode", "masked", "created_at", "rotation_marked_at", "rotation_deadline"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class RotationForm(forms.Form):
    deadline = forms.DateTimeField(
        help_text="ISO 8601, e.g. 2026-12-31T00:00:00+00:00. A past deadline retires the key now.",
    )


def _show_key_once(request, program: Program, mode: str, raw_key: str) -> None:
    messages.warning(
        request,
        f"New {mode} key for {program}: {raw_key} — copy it now, it is shown only once.",
    )


@admin.register(Program)
class ProgramAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "name",
        "workspace",
        "commission_type",
        "commission_rate",
        "hold_days",
        "lead_auth",
        "key",
    ]
    list_filter = ["commission_type", "lead_auth"]
    search_fields = ["name", "domain"]
    inlines = [ProgramKeyInline]
    actions = ["regenerate_live_key", "regenerate_test_key", "mark_live_key_for_rotation"]

    @admin.display(description="API key")
    def key(self, obj: Program) -> str:
        return obj.api_token_masked

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if not change:
                for mode in (ProgramKey.Mode.LIVE, ProgramKey.Mode.TEST):
                    _show_key_once(request, obj, mode, program_key_regenerate(program=obj, mode=mode))

    @admin.action(description="Regenerate the live key (old key stops at once; new key shown once)")
    def regenerate_live_key(self, request, queryset):
        for program in queryset:
            _show_key_once(request, program, "live", program_key_regenerate(program=program))

    @admin.action(description="Regenerate the test key (shown once)")
    def regenerate_test_key(self, request, queryset):
        for program in queryset:
            _show_key_once(request, program, "test", program_key_regenerate(program=program, mode="test"))

    @admin.action(description="Mark the live key for rotation with a deadline…")
    def mark_live_key_for_rotation(self, request, queryset):
        form = RotationForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            deadline = form.cleaned_data["deadline"]
            for key in ProgramKey.objects.filter(program__in=queryset, mode=ProgramKey.Mode.LIVE):
                program_key_mark_rotation(key=key, deadline=deadline)
            retired = deadline <= timezone.now()
            self.message_user(
                request,
                f"Marked {queryset.count()} live key(s) for rotation by {deadline.isoformat()}"
                + (" (retired now)." if retired else "."),
            )
            return None
        return TemplateResponse(
            request,
            "admin/programs/mark_rotation.html",
            {
                **self.admin_site.each_context(request),
                "title": "Mark live key for rotation",
                "programs": queryset,
                "form": form,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )


@admin.register(ProgramKey)
class ProgramKeyAdmin(admin.ModelAdmin):
    list_display = ["id", "program", "mode", "masked", "rotation_deadline"]
    list_filter = ["mode"]
    fields = ["program", "mode", "masked", "created_at", "rotation_marked_at", "rotation_deadline"]
    readonly_fields = ["program", "mode", "masked", "created_at", "rotation_marked_at"]

    def has_add_permission(self, request) -> bool:
        return False  # keys come from program creation and regeneration only


class AgentKeyForm(forms.ModelForm):
    scopes = forms.CharField(required=False, help_text="Comma-separated scope names")

    class Meta:
        model = AgentKey
        fields = ["name", "workspace", "scopes", "revoked_at"]

    def clean_scopes(self) -> list[str]:
        raw = self.cleaned_data.get("scopes") or ""
        if isinstance(raw, list):
            return raw
        return [part.strip() for part in raw.split(",") if part.strip()]


@admin.register(AgentKey)
class AgentKeyAdmin(admin.ModelAdmin):
    """Operators issue agent keys here and only here; the key is shown once after saving."""

    form = AgentKeyForm
    list_display = ["id", "name", "workspace", "masked", "scopes", "created_at", "revoked_at"]
    readonly_fields = ["masked", "created_at"]

    def get_fields(self, request, obj=None):
        return (
            ["name", "workspace", "scopes"]
            if obj is None
            else ["name", "workspace", "scopes", "masked", "created_at", "revoked_at"]
        )

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        raw = agent_key_issue(key=obj)
        messages.warning(request, f"Agent key issued: {raw} — copy it now, it is shown only once.")


@admin.register(Partner)
class PartnerAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "email", "workspace"]
    search_fields = ["name", "email"]


@admin.register(PartnerProgram)
class PartnerProgramAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "partner",
        "program",
        "clicks",
        "leads",
        "sales",
        "revenue_cents",
    ]
    readonly_fields = ["clicks", "leads", "sales", "revenue_cents"]


@admin.register(ReferralLink)
class ReferralLinkAdmin(admin.ModelAdmin):
    list_display = ["id", "short_link", "partner", "program", "is_active", "clicks", "last_clicked"]
    list_filter = ["is_active"]
    search_fields = ["short_link"]
    readonly_fields = ["clicks", "last_clicked"]
