"""Groups in Django admin. A group is made, changed and deleted through groups.services (the default group's terms
are the program's: not editable here); partners are moved with partner_move (the action "Move partners into the
selected group"), so each move has its GroupChange and partner.group_changed event; codes are deactivated with
groups.codes and made on the dashboard or the agent API (with Stripe connected a code is a promotion code made
there). Group changes and bonus awards are the service's records: read only. Every write is on the audit trail as
admin:<username>."""

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from core.admin import ReadOnlyAdmin
from core.errors import ApiError
from core.providers import Providers
from programs.admin import WorkspaceChoicesAdmin
from programs.models import PartnerProgram

from .models import Bonus, BonusAward, CouponCode, DiscountDuration, DiscountType, GroupChange, PartnerGroup, TierRule
from .selectors import default_group
from .services import (
    DEFAULT_GROUP_TERMS,
    GROUP_FIELDS,
    Move,
    group_create,
    group_delete,
    group_snapshot,
    group_update,
    partner_move,
)
from .snapshots import code_snapshot, enrolment_snapshot, row_snapshot
from .stripe_codes import partner_code_deactivate

RULE_COLUMNS = ("group_id", "target_id", "direction", "metric", "period", "threshold", "is_active")
BONUS_COLUMNS = ("group_id", "name", "metric", "period", "threshold", "amount_cents", "currency", "is_active")
CHANGE_COLUMNS: tuple[str, ...] = (
    "created_at",
    "program",
    "partner",
    "from_group",
    "to_group",
    "reason",
    "actor",
    "figure",
    "period_key",
)
AWARD_COLUMNS: tuple[str, ...] = ("created_at", "bonus", "partner", "program", "period_key", "figure", "commission")
DISCOUNT_PERCENT_REQUIRED = "Enter the percent off (more than 0, at most 100)."
DISCOUNT_AMOUNT_REQUIRED = "Enter the amount off, in the currency's smallest unit (more than 0)."
DISCOUNT_MONTHS_REQUIRED = "Enter for how many months the discount applies."


def _actor(request: HttpRequest) -> str:
    return f"admin:{request.user.get_username()}"


# The audit trail's writer belongs to agent_api (its model's app), above groups: named, not imported.
audit_writers: Providers[Callable[..., Any]] = Providers("agent_api.audit.audit_write")


def _audit(
    request: HttpRequest, workspace_id: int, action: str, object_type: str, object_id: Any, **change: Any
) -> None:
    (audit_write,) = audit_writers.functions
    audit_write(
        workspace_id=workspace_id,
        actor=_actor(request),
        action=action,
        object_type=object_type,
        object_id=object_id,
        before=change.get("before"),
        after=change.get("after"),
        request_id=getattr(request, "request_id", "") or "",
    )


def _parent_group(request: HttpRequest) -> PartnerGroup | None:
    """The group whose change page this is (its inlines offer only its program's groups)."""
    match = request.resolver_match
    object_id = match.kwargs.get("object_id") if match else None
    return PartnerGroup.objects.filter(pk=object_id).first() if object_id and str(object_id).isdigit() else None


class TierRuleInline(admin.TabularInline[TierRule, PartnerGroup]):
    model = TierRule
    fk_name = "group"
    extra = 0
    fields = ["direction", "metric", "period", "threshold", "target", "is_active"]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "target":
            parent = _parent_group(request)
            kwargs["queryset"] = (
                PartnerGroup.objects.filter(program_id=parent.program_id).exclude(pk=parent.pk)
                if parent is not None
                else PartnerGroup.objects.none()
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class BonusInline(admin.TabularInline[Bonus, PartnerGroup]):
    model = Bonus
    extra = 0
    fields = ["name", "metric", "period", "threshold", "amount_cents", "currency", "is_active"]


class PartnerGroupForm(forms.ModelForm[PartnerGroup]):
    """The model's checks, and the discount's parts its constraints let through as NULL (a CHECK passes on NULL)."""

    class Meta:
        model = PartnerGroup
        fields = ["program", *GROUP_FIELDS]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind = cleaned.get("discount_type", "")
        if kind == DiscountType.PERCENT and cleaned.get("discount_percent") is None:
            self.add_error("discount_percent", DISCOUNT_PERCENT_REQUIRED)
        if kind == DiscountType.AMOUNT and cleaned.get("discount_amount_cents") is None:
            self.add_error("discount_amount_cents", DISCOUNT_AMOUNT_REQUIRED)
        repeating = cleaned.get("discount_duration") == DiscountDuration.REPEATING
        if kind and repeating and cleaned.get("discount_duration_months") is None:
            self.add_error("discount_duration_months", DISCOUNT_MONTHS_REQUIRED)
        return cleaned


class MoveForm(forms.Form):
    enrolments = forms.ModelMultipleChoiceField(
        queryset=PartnerProgram.objects.none(), widget=forms.CheckboxSelectMultiple, label="Partners to move"
    )


@admin.register(PartnerGroup)
class PartnerGroupAdmin(WorkspaceChoicesAdmin[PartnerGroup]):
    """Saved through groups.services: its checks and messages are the dashboard's and the agent API's."""

    form = PartnerGroupForm
    list_display = ["id", "name", "program", "is_default", "commission_type", "commission_rate", "discount_type"]
    list_filter = ["is_default", "commission_type", "discount_type", "applications_open"]
    search_fields = ["name", "program__name"]
    list_select_related = ["program"]
    raw_id_fields = ["program"]
    inlines = [TierRuleInline, BonusInline]
    actions = ["move_partners"]

    @admin.display(description="Commission terms")
    def program_terms(self, obj: PartnerGroup) -> str:
        program = obj.program
        return (
            f"The program's settings: {program.get_commission_type_display()}, rate {program.commission_rate}, "
            f"{program.duration_months} months (0 = lifetime), hold {program.hold_days} days. Changed on the "
            "program (Programs) or with PATCH /api/v1/programs/<id>/settings."
        )

    def get_fields(self, request: HttpRequest, obj: PartnerGroup | None = None) -> Any:
        fields = ["program", *GROUP_FIELDS, "slug", "is_default", "stripe_coupon_id", "created_at", "updated_at"]
        if obj is not None and obj.is_default:
            fields = [name for name in fields if name not in DEFAULT_GROUP_TERMS]
            fields.insert(2, "program_terms")
        return fields

    def get_readonly_fields(self, request: HttpRequest, obj: PartnerGroup | None = None) -> list[str]:
        readonly = ["slug", "is_default", "stripe_coupon_id", "created_at", "updated_at", "program_terms"]
        return readonly if obj is None else ["program", *readonly]

    def has_delete_permission(self, request: HttpRequest, obj: PartnerGroup | None = None) -> bool:
        if obj is not None and (obj.is_default or PartnerProgram.objects.filter(group=obj).exists()):
            return False  # groups.services refuses both: the default group, and a group with partners
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: PartnerGroup, form: Any, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in GROUP_FIELDS if name in form.cleaned_data}
        with transaction.atomic():
            if change:
                before = group_snapshot(PartnerGroup.objects.get(pk=obj.pk))
                if obj.is_default:
                    fields = {name: value for name, value in fields.items() if name not in DEFAULT_GROUP_TERMS}
                group_update(group=obj, **fields)
                _audit(
                    request,
                    obj.program.workspace_id,
                    "group.update",
                    "group",
                    obj.pk,
                    before=before,
                    after=group_snapshot(obj),
                )
            else:
                made = group_create(program=obj.program, **fields)
                # The admin goes on with `obj` (its inlines, its redirect): it becomes the row the service made.
                obj.pk, obj.slug, obj.created_at = made.pk, made.slug, made.created_at
                obj._state.adding, obj._state.db = False, made._state.db
                _audit(request, obj.program.workspace_id, "group.create", "group", obj.pk, after=group_snapshot(made))

    def delete_model(self, request: HttpRequest, obj: PartnerGroup) -> None:
        with transaction.atomic():
            before = group_snapshot(obj)
            group_delete(group=obj)
            _audit(request, obj.program.workspace_id, "group.delete", "group", before["id"], before=before)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[PartnerGroup]) -> None:
        for group in queryset.select_related("program"):
            try:
                self.delete_model(request, group)
            except ApiError as refusal:
                self.message_user(request, f"{group.name}: {refusal.message}", messages.ERROR)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        """Tier rules and bonuses as the inlines saved them, each on the audit trail."""
        group: PartnerGroup = form.instance
        kind, columns = ("tier_rule", RULE_COLUMNS) if formset.model is TierRule else ("bonus", BONUS_COLUMNS)
        befores = {
            row.pk: row_snapshot(row, columns)
            for row in formset.model.objects.filter(pk__in=[f.instance.pk for f in formset.forms if f.instance.pk])
        }
        with transaction.atomic():
            formset.save()
            workspace_id = group.program.workspace_id
            for row in formset.new_objects:
                _audit(request, workspace_id, f"{kind}.create", kind, row.pk, after=row_snapshot(row, columns))
            for row, _changed in formset.changed_objects:
                _audit(
                    request,
                    workspace_id,
                    f"{kind}.update",
                    kind,
                    row.pk,
                    before=befores.get(row.pk),
                    after=row_snapshot(row, columns),
                )
            for row in formset.deleted_objects:
                before = befores.get(row.pk) or {}
                _audit(request, workspace_id, f"{kind}.delete", kind, before.get("id", ""), before=before)

    @admin.action(description="Move partners into the selected group…", permissions=["change"])
    def move_partners(self, request: HttpRequest, queryset: QuerySet[PartnerGroup]) -> TemplateResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Select one group: the group to move partners into.", messages.WARNING)
            return None
        group = queryset.select_related("program").get()
        elsewhere = PartnerProgram.objects.filter(program_id=group.program_id).select_related("partner", "group")
        elsewhere = elsewhere.exclude(group=group)
        if group.is_default:
            elsewhere = elsewhere.exclude(group__isnull=True)
        form = MoveForm(request.POST if "apply" in request.POST else None)
        form.fields["enrolments"].queryset = elsewhere.order_by("partner__name")  # type: ignore[attr-defined]
        form.fields["enrolments"].label_from_instance = (  # type: ignore[attr-defined]
            lambda enrolment: (
                f"{enrolment.partner.name} (now in {(enrolment.group or default_group(group.program)).name})"
            )
        )
        if "apply" in request.POST and form.is_valid():
            moved = 0
            for enrolment in form.cleaned_data["enrolments"]:
                with transaction.atomic():
                    before_group = enrolment.group_id or default_group(group.program).pk
                    change = partner_move(
                        enrolment=enrolment,
                        group=group,
                        move=Move(reason=GroupChange.Reason.OWNER, actor=_actor(request)),
                    )
                    if change is not None:
                        moved += 1
                        _audit(
                            request,
                            group.program.workspace_id,
                            "enrolment.move",
                            "enrolment",
                            enrolment.pk,
                            before=enrolment_snapshot(enrolment, group_id=before_group),
                            after={**enrolment_snapshot(enrolment, group_id=group.pk), "group_change_id": change.pk},
                        )
            self.message_user(request, f"Moved {moved} partner(s) into {group.name}.")
            return None
        return TemplateResponse(
            request,
            "admin/groups/move_partners.html",
            {
                **self.admin_site.each_context(request),
                "title": f"Move partners into {group.name}",
                "group": group,
                "form": form,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )


@admin.register(CouponCode)
class CouponCodeAdmin(WorkspaceChoicesAdmin[CouponCode]):
    """Made on the dashboard (a partner's group and codes page) or the agent API, where a Stripe promotion code is
    made with it; here they are found and deactivated."""

    list_display = ["code", "partner", "program", "source", "is_active", "created_at"]
    list_filter = ["source", "is_active"]
    search_fields = ["code", "partner__name", "stripe_promotion_code_id"]
    list_select_related = ["partner", "program"]
    readonly_fields = ["program", "partner", "code", "source", "stripe_promotion_code_id", "is_active", "created_at"]
    actions = ["deactivate"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: CouponCode | None = None) -> bool:
        return False  # deactivated instead: the sales it attributed keep naming it

    @admin.action(
        description="Deactivate selected codes (sales carrying them are no longer credited)", permissions=["change"]
    )
    def deactivate(self, request: HttpRequest, queryset: QuerySet[CouponCode]) -> None:
        count = 0
        for code in queryset.select_related("program"):
            try:
                with transaction.atomic():
                    before = code_snapshot(code)
                    if not partner_code_deactivate(code=code):
                        continue
                    count += 1
                    _audit(
                        request,
                        code.program.workspace_id,
                        "coupon_code.deactivate",
                        "coupon_code",
                        code.pk,
                        before=before,
                        after=code_snapshot(code),
                    )
            except ApiError as refusal:
                self.message_user(request, f"{code.code}: {refusal.message}", messages.ERROR)
        self.message_user(request, f"Deactivated {count} code(s).")


@admin.register(GroupChange)
class GroupChangeAdmin(ReadOnlyAdmin[GroupChange]):
    """Every move of a partner between groups, as partner_move recorded it."""

    list_display = CHANGE_COLUMNS
    list_filter = ["reason"]
    search_fields = ["partner__name", "actor"]
    date_hierarchy = "created_at"
    list_select_related = ["program", "partner", "from_group", "to_group"]
    readonly_fields = (*CHANGE_COLUMNS, "rule")


@admin.register(BonusAward)
class BonusAwardAdmin(ReadOnlyAdmin[BonusAward]):
    """Every bonus paid: its commission and the figure that reached the threshold."""

    list_display = AWARD_COLUMNS
    list_filter = ["period_key"]
    search_fields = ["partner__name", "bonus__name"]
    date_hierarchy = "created_at"
    list_select_related = ["bonus", "partner", "program", "commission"]
    readonly_fields = AWARD_COLUMNS
