import copy
from typing import Any, TypeVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from .models import (
    AGENT_SCOPES,
    AgentKey,
    Membership,
    Partner,
    PartnerAccount,
    PartnerInvitation,
    PartnerProgram,
    Program,
    ProgramKey,
    ReferralLink,
    Workspace,
    workspace_id_of,
)
from .selectors import live_keys
from .services import (
    AgentKeyInvalid,
    agent_key_issue,
    agent_key_revoke,
    agent_key_scopes_check,
    program_key_mark_rotation,
    program_key_regenerate,
)

# The lookup from a row to its workspace, by the first of these fields the model has (workspace_id_of's rule).
_WORKSPACE_LOOKUPS = (
    ("workspace", "workspace_id"),
    ("program", "program__workspace_id"),
    ("partner", "partner__workspace_id"),
    ("commission", "commission__program__workspace_id"),
)


ModelT = TypeVar("ModelT", bound=Model)


def workspace_rows(queryset: QuerySet[ModelT], workspace_id: int) -> QuerySet[ModelT]:
    """The rows of `queryset` that belong to the workspace; all of them for a model no workspace owns."""
    if queryset.model is Workspace:
        return queryset.filter(pk=workspace_id)
    names = {field.name for field in queryset.model._meta.get_fields()}
    for field, lookup in _WORKSPACE_LOOKUPS:
        if field in names:
            return queryset.filter(**{lookup: workspace_id})
    return queryset


class WorkspaceChoicesAdmin(admin.ModelAdmin[ModelT]):
    """For a row that ties objects together: its change form offers, and accepts, only objects of the row's
    workspace in every related-object field (selects, raw ids, many-to-many alike). An add form has no workspace
    until its fields are chosen, so there the model's clean() refuses a mix (programs.models.same_workspace)."""

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[ModelT]]:
        form = super().get_form(request, obj, change=change, **kwargs)
        workspace_id = workspace_id_of(obj) if obj is not None else None
        if workspace_id is not None:
            for name, field in list(form.base_fields.items()):
                if isinstance(field, forms.ModelChoiceField) and field.queryset is not None:
                    # A copy: a field declared on the form class is shared by every form built from it.
                    scoped = copy.deepcopy(field)
                    scoped.queryset = workspace_rows(field.queryset, workspace_id)
                    form.base_fields[name] = scoped
        return form


class MembershipInline(admin.TabularInline[Membership, Workspace]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin[Workspace]):
    list_display = ["id", "name", "is_blocked", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["id", "workspace", "user", "role", "is_active"]
    list_filter = ["role", "is_active"]
    search_fields = ["user__username", "workspace__name"]


class ProgramKeyInline(admin.TabularInline[ProgramKey, Program]):
    model = ProgramKey
    extra = 0
    can_delete = False
    fields = ["mode", "masked", "created_at", "rotation_marked_at", "rotation_deadline"]
    readonly_fields = ["mode", "masked", "created_at", "rotation_marked_at", "rotation_deadline"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RotationForm(forms.Form):
    deadline = forms.DateTimeField(
        help_text="ISO 8601, e.g. 2026-12-31T00:00:00+00:00. A past deadline retires the key now.",
    )


def _show_key_once(request: HttpRequest, program: Program, mode: str, raw_key: str) -> None:
    messages.warning(
        request,
        f"New {mode} key for {program}: {raw_key} — copy it now, it is shown only once.",
    )


@admin.register(Program)
class ProgramAdmin(admin.ModelAdmin[Program]):
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

    def save_model(self, request: HttpRequest, obj: Program, form: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if not change:
                for mode in (ProgramKey.Mode.LIVE, ProgramKey.Mode.TEST):
                    _show_key_once(request, obj, mode, program_key_regenerate(program=obj, mode=mode))

    @admin.action(description="Regenerate the live key (old key stops at once; new key shown once)")
    def regenerate_live_key(self, request: HttpRequest, queryset: QuerySet[Program]) -> None:
        for program in queryset:
            _show_key_once(request, program, "live", program_key_regenerate(program=program))

    @admin.action(description="Regenerate the test key (shown once)")
    def regenerate_test_key(self, request: HttpRequest, queryset: QuerySet[Program]) -> None:
        for program in queryset:
            _show_key_once(request, program, "test", program_key_regenerate(program=program, mode="test"))

    @admin.action(description="Mark the live key for rotation with a deadline…")
    def mark_live_key_for_rotation(self, request: HttpRequest, queryset: QuerySet[Program]) -> TemplateResponse | None:
        form = RotationForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            deadline = form.cleaned_data["deadline"]
            for key in live_keys().filter(program__in=queryset):
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
class ProgramKeyAdmin(admin.ModelAdmin[ProgramKey]):
    list_display = ["id", "program", "mode", "masked", "rotation_deadline"]
    list_filter = ["mode"]
    fields = ["program", "mode", "masked", "created_at", "rotation_marked_at", "rotation_deadline"]
    readonly_fields = ["program", "mode", "masked", "created_at", "rotation_marked_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys come from program creation and regeneration only


class ProgramsWithWorkspaceField(forms.ModelMultipleChoiceField[Program]):
    def label_from_instance(self, obj: Program) -> str:
        return f"{obj} — {obj.workspace}"


class AgentKeyForm(forms.ModelForm[AgentKey]):
    """Validates everything the services would refuse, so a bad key is a form error and never a 500."""

    scopes = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in AGENT_SCOPES],
        widget=forms.CheckboxSelectMultiple,
        help_text="Write includes read for the same resource.",
    )
    programs = ProgramsWithWorkspaceField(
        queryset=Program.objects.select_related("workspace").order_by("workspace_id", "name"),
        required=False,
        help_text="Leave empty for every program of the workspace. Only programs of the key's workspace.",
    )

    class Meta:
        model = AgentKey
        fields = ["name", "workspace", "programs", "scopes", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "workspace" in self.fields:
            self.fields["workspace"].required = True

    def clean_scopes(self) -> list[str]:
        try:
            return agent_key_scopes_check(self.cleaned_data.get("scopes") or [])
        except AgentKeyInvalid as error:
            raise forms.ValidationError(str(error)) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # The workspace is only a form field while the key has none; afterwards it is the instance's.
        workspace = cleaned.get("workspace") if "workspace" in self.fields else self.instance.workspace
        programs = cleaned.get("programs") or []
        if workspace is not None:
            foreign = [program.pk for program in programs if program.workspace_id != workspace.pk]
            if foreign:
                self.add_error(
                    "programs",
                    f"Program(s) {', '.join(map(str, foreign))} are not in workspace {workspace.pk}",
                )
        return cleaned


class RevokedFilter(admin.SimpleListFilter):
    title = "revoked"
    parameter_name = "revoked"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Revoked"), ("no", "Not revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AgentKey]) -> QuerySet[AgentKey]:
        if self.value() == "yes":
            return queryset.filter(revoked_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(revoked_at__isnull=True)
        return queryset


@admin.register(AgentKey)
class AgentKeyAdmin(WorkspaceChoicesAdmin[AgentKey]):
    """Operators issue agent keys here (or with `manage.py agent_key`); the key is shown once after saving.
    Revocation goes through the action so it always uses the service."""

    form = AgentKeyForm
    list_display = ["name", "workspace", "masked", "scope_list", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["workspace", RevokedFilter]
    search_fields = ["name", "last4"]
    actions = ["revoke_selected"]

    @admin.display(description="scopes")
    def scope_list(self, obj: AgentKey) -> str:
        return ", ".join(obj.scopes)

    def get_fields(self, request: HttpRequest, obj: AgentKey | None = None) -> tuple[str, ...]:
        fields = ("name", "workspace", "programs", "scopes", "expires_at")
        return fields if obj is None else (*fields, "masked", "created_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: AgentKey | None = None) -> list[str]:
        if obj is None:
            return []
        # Moving an issued key to another workspace would silently change what it reaches; only a legacy key
        # without a workspace may be given one.
        bound = ["workspace"] if obj.workspace_id is not None else []
        return [*bound, "masked", "created_at", "last_used_at", "revoked_at"]

    def save_model(self, request: HttpRequest, obj: AgentKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # The programs were checked against the workspace by the form; save_related sets them on the saved key.
        raw = agent_key_issue(key=obj)
        messages.warning(request, f"Agent key issued: {raw} — copy it now, it is shown only once.")

    @admin.action(description="Revoke selected agent keys")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[AgentKey]) -> None:
        revoked = sum(agent_key_revoke(key=key) for key in queryset)
        already = queryset.count() - revoked
        self.message_user(
            request,
            f"Revoked {revoked} agent key(s)." + (f" {already} were already revoked." if already else ""),
        )


@admin.register(Partner)
class PartnerAdmin(admin.ModelAdmin[Partner]):
    list_display = ["id", "name", "email", "workspace", "account"]
    search_fields = ["name", "email"]
    # The portal account that signs in as this partner (set by accepting an invitation).
    raw_id_fields = ["account"]


@admin.register(PartnerAccount)
class PartnerAccountAdmin(admin.ModelAdmin[PartnerAccount]):
    """A partner's portal sign-in. The password is only ever a hash, never shown; deactivating an account ends its
    portal sessions at their next request."""

    list_display = ["email", "is_active", "last_login", "created_at"]
    search_fields = ["email"]
    fields = ["email", "is_active", "last_login", "created_at"]
    readonly_fields = ["email", "last_login", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # accounts are made by accepting an invitation


@admin.register(PartnerInvitation)
class PartnerInvitationAdmin(admin.ModelAdmin[PartnerInvitation]):
    """Invitations sent from the dashboard's Partners page. The link itself is stored nowhere (only its digest)."""

    list_display = ["email", "program", "partner", "created_at", "expires_at", "accepted_at"]
    list_filter = ["program"]
    search_fields = ["email"]
    readonly_fields = ["program", "partner", "email", "invited_by", "created_at", "expires_at", "accepted_at"]
    exclude = ["digest"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sent from the Partners page, which emails the link


def _staff(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


@admin.register(PartnerProgram)
class PartnerProgramAdmin(WorkspaceChoicesAdmin[PartnerProgram]):
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
    fieldsets = [
        (None, {"fields": ["partner", "program"]}),
        (
            "Counters",
            {
                "fields": ["clicks", "leads", "sales", "revenue_cents"],
                "description": "Live events only. Each lead adds itself; clicks, sales and revenue (gross) are added "
                "by the rollup run, so they may lag one run behind the events.",
            },
        ),
    ]


@admin.register(ReferralLink)
class ReferralLinkAdmin(WorkspaceChoicesAdmin[ReferralLink]):
    list_display = ["id", "short_link", "partner", "program", "is_active", "clicks", "last_clicked"]
    list_filter = ["is_active"]
    search_fields = ["short_link"]
    readonly_fields = ["clicks", "last_clicked"]
