"""The Groups tab: a program's partner groups with their terms, tier rules and bonuses, and on the partners' side
each partner's group (moved by an owner) and coupon codes.

Any member reads (tracking:list); roles with program:manage write, through groups.services, groups.rules,
groups.codes and groups.stripe_codes only, each write with its audit entry (agent_api.audit) in one transaction. A
group, rule, bonus, partner or code is found through the program in the path alone: another program's or
workspace's id answers 404 exactly like an id that names nothing. A refusal is shown on the form it came from
(status 400), never as a server error."""

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.contrib import messages as flash
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from agent_api.audit import audit_write
from core.errors import ApiError
from core.ids import id_parse
from core.money import money
from core.urls import public_url
from groups.models import Bonus, CouponCode, DiscountDuration, DiscountType, GroupChange, Metric, PartnerGroup, TierRule
from groups.rules import bonus_create, bonus_delete, tier_rule_create, tier_rule_delete
from groups.selectors import default_group, program_groups
from groups.services import Move, group_create, group_delete, group_snapshot, group_update, partner_move
from groups.snapshots import code_snapshot, enrolment_snapshot, row_snapshot, user_actor
from groups.stripe_codes import partner_code_create
from groups.stripe_codes import partner_code_deactivate as code_turn_off
from programs.models import Action, PartnerProgram, Program

from .group_forms import BonusForm, CodeForm, GroupForm, MoveForm, TierRuleForm
from .views import ProgramAccess, commission_terms
from .webhook_views import program_action

GROUP_CREATED = "Group {name} made. Move partners into it from the Partners page."
GROUP_SAVED = "Group {name} saved. Commissions already earned keep the terms they were computed under."
GROUP_DELETED = "Group {name} deleted."
RULE_ADDED = "Tier rule added: it is evaluated by the daily tier job."
RULE_REMOVED = "Tier rule removed. The moves it made stay recorded."
BONUS_ADDED = "Bonus {name} added."
BONUS_REMOVED = "Bonus {name} removed."
MOVED = "{partner} moved to {group}: commissions earned from now on use its terms."
ALREADY_IN = "{partner} already is in {group}: nothing changed."
CODE_ADDED = "Code {code} added for {partner}."
CODE_DEACTIVATED = "Code {code} deactivated: sales carrying it are no longer credited to {partner}."
CODE_ALREADY_OFF = "Code {code} already was deactivated."

RULE_COLUMNS = ("group_id", "target_id", "direction", "metric", "period", "threshold", "is_active")
BONUS_COLUMNS = ("group_id", "name", "metric", "period", "threshold", "amount_cents", "currency", "is_active")
# The partner page lists this many of the partner's latest group changes.
CHANGES_SHOWN = 20
# The group page lists this many of its partners, by name (the count says how many there are).
MEMBERS_SHOWN = 50


# --- Reading -----------------------------------------------------------------------------------------------------


def _group(access: ProgramAccess, group_id: object) -> PartnerGroup:
    wanted = id_parse(group_id)
    group = PartnerGroup.objects.filter(program=access.program, pk=wanted).first() if wanted is not None else None
    if group is None:
        raise Http404("Group not found")
    return group


def _enrolment(access: ProgramAccess, partner_id: object) -> PartnerProgram:
    """The partner's enrolment in the program (so a partner of its workspace); 404 otherwise."""
    wanted = id_parse(partner_id)
    enrolment = (
        PartnerProgram.objects.filter(program=access.program, partner_id=wanted)
        .select_related("partner", "group", "program")
        .first()
        if wanted is not None
        else None
    )
    if enrolment is None:
        raise Http404("Partner not found")
    return enrolment


def _code(access: ProgramAccess, code_id: object) -> CouponCode:
    wanted = id_parse(code_id)
    code = (
        CouponCode.objects.filter(program=access.program, pk=wanted).select_related("partner").first()
        if wanted is not None
        else None
    )
    if code is None:
        raise Http404("Code not found")
    return code


def _amount(cents: int | None, currency: str) -> str:
    return money(cents or 0, currency)


def discount_words(group: PartnerGroup) -> str:
    """The customer discount in plain words: "10% off the first payment", "5.00 USD off for the first 3 months"."""
    if group.discount_type == DiscountType.PERCENT and group.discount_percent is not None:
        off = f"{group.discount_percent.normalize():f}% off"
    elif group.discount_type == DiscountType.AMOUNT and group.discount_amount_cents:
        off = f"{_amount(group.discount_amount_cents, group.discount_currency)} off"
    else:
        return "No customer discount"
    if group.discount_duration == DiscountDuration.FOREVER:
        return f"{off} every payment"
    if group.discount_duration == DiscountDuration.REPEATING:
        months = group.discount_duration_months or 0
        return f"{off} every payment for the first {months} month{'s' if months != 1 else ''}"
    return f"{off} the first payment"


def terms_words(group: PartnerGroup, program: Program) -> str:
    """The group's commission terms in one sentence with the hold period (the default group's are the program's)."""
    # commission_terms words a program's columns; a group's are the same columns, read through an unsaved Program.
    source = (
        program
        if group.is_default
        else Program(
            commission_type=group.commission_type,
            commission_rate=Decimal(str(group.commission_rate)),
            duration_months=group.duration_months,
            hold_days=group.hold_days,
        )
    )
    days = source.hold_days
    return f"{commission_terms(source)}; held {days} day{'s' if days != 1 else ''}"


def figure_words(metric: str, threshold: int) -> str:
    """A threshold as the owner typed it: "10 sales", "1,000.00 revenue"."""
    if metric == Metric.SALES:
        return f"{threshold:,} sale{'s' if threshold != 1 else ''}"
    return f"{money(threshold)} revenue"


def rule_words(rule: TierRule) -> str:
    period = "calendar month" if rule.period == "month" else "calendar quarter"
    figure = figure_words(rule.metric, rule.threshold)
    if rule.direction == TierRule.Direction.PROMOTE:
        return f"Moved to {rule.target.name} on reaching {figure} in a {period}"
    return f"Moved to {rule.target.name} with less than {figure} in the last complete {period}"


def bonus_words(bonus: Bonus) -> str:
    figure = figure_words(bonus.metric, bonus.threshold)
    when = "ever" if bonus.period == "lifetime" else f"in a calendar {bonus.period}"
    return f"{_amount(bonus.amount_cents, bonus.currency)} on reaching {figure} {when}"


def _partner_counts(program: Program) -> dict[int | None, int]:
    rows = PartnerProgram.objects.filter(program=program).values("group_id").annotate(count=Count("pk"))
    return {row["group_id"]: row["count"] for row in rows}


def _group_rows(program: Program) -> list[dict[str, Any]]:
    groups = program_groups(program)
    counts = _partner_counts(program)
    rules = dict(
        TierRule.objects.filter(group__program=program)
        .values("group_id")
        .annotate(n=Count("pk"))
        .values_list("group_id", "n")
    )
    bonuses = dict(
        Bonus.objects.filter(group__program=program)
        .values("group_id")
        .annotate(n=Count("pk"))
        .values_list("group_id", "n")
    )
    rows = []
    for group in groups:
        partners = counts.get(group.pk, 0) + (counts.get(None, 0) if group.is_default else 0)
        rows.append(
            {
                "group": group,
                "partners": partners,
                "terms": terms_words(group, program),
                "discount": discount_words(group),
                "rules": rules.get(group.pk, 0),
                "bonuses": bonuses.get(group.pk, 0),
            }
        )
    return rows


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def groups_list(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    return render(request, "dashboard/program_groups.html", access.context(rows=_group_rows(access.program)))


def _group_page(
    request: HttpRequest,
    access: ProgramAccess,
    group: PartnerGroup,
    *,
    rule_form: TierRuleForm | None = None,
    bonus_form: BonusForm | None = None,
    status: int = 200,
) -> HttpResponse:
    program = access.program
    counts = _partner_counts(program)
    partners = counts.get(group.pk, 0) + (counts.get(None, 0) if group.is_default else 0)
    rules = list(TierRule.objects.filter(group=group).select_related("target").order_by("direction", "threshold", "pk"))
    bonuses = list(Bonus.objects.filter(group=group).order_by("threshold", "pk"))
    members = PartnerProgram.objects.filter(program=program).select_related("partner")
    members = (
        members.filter(Q(group=group) | Q(group__isnull=True)) if group.is_default else members.filter(group=group)
    )
    return render(
        request,
        "dashboard/group_detail.html",
        access.context(
            group=group,
            partners=partners,
            terms=terms_words(group, program),
            discount=discount_words(group),
            join_address=public_url(request, f"/join/{program.pk}/{group.slug}"),
            rules=[{"rule": rule, "words": rule_words(rule)} for rule in rules],
            bonuses=[{"bonus": bonus, "words": bonus_words(bonus)} for bonus in bonuses],
            rule_form=rule_form or TierRuleForm(group=group, auto_id="rule_%s"),
            bonus_form=bonus_form or BonusForm(auto_id="bonus_%s"),
            has_targets=PartnerGroup.objects.filter(program=program).exclude(pk=group.pk).exists(),
            members=list(members.order_by("partner__name", "pk")[:MEMBERS_SHOWN]),
        ),
        status=status,
    )


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def group_detail(request: HttpRequest, access: ProgramAccess, group_id: int) -> HttpResponse:
    return _group_page(request, access, _group(access, group_id))


# --- Writing -----------------------------------------------------------------------------------------------------


def _audited(
    request: HttpRequest,
    access: ProgramAccess,
    *,
    action: str,
    object_type: str,
    write: Callable[[], tuple[Any, dict[str, Any] | None, dict[str, Any] | None]],
) -> Any:
    """Runs `write` (a service call returning the object, its before and its after) with its audit entry, in one
    transaction: a refusal (ApiError) rolls both back and reaches the caller."""
    with transaction.atomic():
        written, before, after = write()
        _audit(request, access, action, object_type, (after or before or {}).get("id", ""), before, after)
    return written


def _audit(
    request: HttpRequest,
    access: ProgramAccess,
    action: str,
    object_type: str,
    object_id: int | str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> None:
    audit_write(
        workspace_id=access.program.workspace_id,
        actor=user_actor(request.user),
        action=action,
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
        request_id=getattr(request, "request_id", "") or "",
    )


def _group_form_page(
    request: HttpRequest, access: ProgramAccess, form: GroupForm, group: PartnerGroup | None, status: int
) -> HttpResponse:
    program = access.program
    return render(
        request,
        "dashboard/group_form.html",
        access.context(
            form=form,
            group=group,
            program_terms=terms_words(group, program) if group is not None and group.is_default else "",
            admin_program_url=reverse("admin:programs_program_change", args=[program.pk])
            if getattr(request.user, "is_staff", False)
            else "",
        ),
        status=status,
    )


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def group_new(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = GroupForm(request.POST if request.method == "POST" else None)
    if request.method != "POST":
        return _group_form_page(request, access, form, None, 200)
    if form.is_valid():
        fields = form.group_fields()
        try:
            group = _audited(
                request,
                access,
                action="group.create",
                object_type="group",
                write=lambda: _made(group_create(program=access.program, **fields)),
            )
        except ApiError as refusal:
            form.add_error(None, refusal.message)
        else:
            flash.success(request, GROUP_CREATED.format(name=group.name))
            return redirect("dashboard-group", program_id=access.program.pk, group_id=group.pk)
    return _group_form_page(request, access, form, None, 400)


def _made(group: PartnerGroup) -> tuple[PartnerGroup, None, dict[str, Any]]:
    return group, None, group_snapshot(group)


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def group_edit(request: HttpRequest, access: ProgramAccess, group_id: int) -> HttpResponse:
    group = _group(access, group_id)
    form = GroupForm(
        request.POST if request.method == "POST" else None,
        initial=GroupForm.initial_of(group),
        default=group.is_default,
    )
    if request.method != "POST":
        return _group_form_page(request, access, form, group, 200)
    if form.is_valid():
        fields = form.group_fields()

        def write() -> tuple[PartnerGroup, dict[str, Any], dict[str, Any]]:
            locked = PartnerGroup.objects.select_for_update().get(pk=group.pk)
            before = group_snapshot(locked)
            changed = group_update(group=locked, **fields)
            return changed, before, group_snapshot(changed)

        try:
            saved = _audited(request, access, action="group.update", object_type="group", write=write)
        except ApiError as refusal:
            form.add_error(None, refusal.message)
        else:
            flash.success(request, GROUP_SAVED.format(name=saved.name))
            return redirect("dashboard-group", program_id=access.program.pk, group_id=group.pk)
    return _group_form_page(request, access, form, group, 400)


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def group_remove(request: HttpRequest, access: ProgramAccess, group_id: int) -> HttpResponse:
    """GET asks to confirm; the POST of that form deletes (an empty group that is not the default)."""
    group = _group(access, group_id)
    partners = PartnerProgram.objects.filter(program=access.program, group=group).count()
    error = ""
    if request.method == "POST":

        def write() -> tuple[None, dict[str, Any], None]:
            before = group_snapshot(group)
            group_delete(group=group)
            return None, before, None

        try:
            _audited(request, access, action="group.delete", object_type="group", write=write)
        except ApiError as refusal:
            error = refusal.message
        else:
            flash.success(request, GROUP_DELETED.format(name=group.name))
            return redirect("dashboard-groups", program_id=access.program.pk)
    return render(
        request,
        "dashboard/group_delete.html",
        access.context(group=group, partners=partners, error=error),
        status=400 if error else 200,
    )


def _back_to_group(group: PartnerGroup, anchor: str) -> HttpResponse:
    response = redirect("dashboard-group", program_id=group.program_id, group_id=group.pk)
    response["Location"] += f"#{anchor}"
    return response


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def tier_rule_add(request: HttpRequest, access: ProgramAccess, group_id: int) -> HttpResponse:
    group = _group(access, group_id)
    form = TierRuleForm(request.POST, group=group, auto_id="rule_%s")
    if form.is_valid():
        fields = form.rule_fields()

        def write() -> tuple[TierRule, None, dict[str, Any]]:
            rule = tier_rule_create(group=group, **fields)
            return rule, None, row_snapshot(rule, RULE_COLUMNS)

        try:
            _audited(request, access, action="tier_rule.create", object_type="tier_rule", write=write)
        except ApiError as refusal:
            form.add_error(None, refusal.message)
        else:
            flash.success(request, RULE_ADDED)
            return _back_to_group(group, "tier-rules")
    return _group_page(request, access, group, rule_form=form, status=400)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def tier_rule_remove(request: HttpRequest, access: ProgramAccess, group_id: int, rule_id: int) -> HttpResponse:
    group = _group(access, group_id)
    wanted = id_parse(rule_id)
    rule = TierRule.objects.filter(group=group, pk=wanted).first() if wanted is not None else None
    if rule is None:
        raise Http404("Tier rule not found")

    def write() -> tuple[None, dict[str, Any], None]:
        before = row_snapshot(rule, RULE_COLUMNS)
        tier_rule_delete(rule=rule)
        return None, before, None

    _audited(request, access, action="tier_rule.delete", object_type="tier_rule", write=write)
    flash.success(request, RULE_REMOVED)
    return _back_to_group(group, "tier-rules")


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def bonus_add(request: HttpRequest, access: ProgramAccess, group_id: int) -> HttpResponse:
    group = _group(access, group_id)
    form = BonusForm(request.POST, auto_id="bonus_%s")
    if form.is_valid():
        fields = form.bonus_fields()

        def write() -> tuple[Bonus, None, dict[str, Any]]:
            bonus = bonus_create(group=group, **fields)
            return bonus, None, row_snapshot(bonus, BONUS_COLUMNS)

        try:
            bonus = _audited(request, access, action="bonus.create", object_type="bonus", write=write)
        except ApiError as refusal:
            form.add_error(None, refusal.message)
        else:
            flash.success(request, BONUS_ADDED.format(name=bonus.name))
            return _back_to_group(group, "bonuses")
    return _group_page(request, access, group, bonus_form=form, status=400)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def bonus_remove(request: HttpRequest, access: ProgramAccess, group_id: int, bonus_id: int) -> HttpResponse:
    group = _group(access, group_id)
    wanted = id_parse(bonus_id)
    bonus = Bonus.objects.filter(group=group, pk=wanted).first() if wanted is not None else None
    if bonus is None:
        raise Http404("Bonus not found")

    def write() -> tuple[None, dict[str, Any], None]:
        before = row_snapshot(bonus, BONUS_COLUMNS)
        bonus_delete(bonus=bonus)
        return None, before, None

    try:
        _audited(request, access, action="bonus.delete", object_type="bonus", write=write)
    except ApiError as refusal:
        flash.error(request, refusal.message)
    else:
        flash.success(request, BONUS_REMOVED.format(name=bonus.name))
    return _back_to_group(group, "bonuses")


# --- A partner's group and codes ---------------------------------------------------------------------------------


def _partner_page(
    request: HttpRequest,
    access: ProgramAccess,
    enrolment: PartnerProgram,
    *,
    move_form: MoveForm | None = None,
    code_form: CodeForm | None = None,
    status: int = 200,
) -> HttpResponse:
    program = access.program
    group = enrolment.group or default_group(program)
    codes = list(
        CouponCode.objects.filter(program=program, partner_id=enrolment.partner_id).order_by("-is_active", "code")
    )
    changes = list(
        GroupChange.objects.filter(program=program, partner_id=enrolment.partner_id)
        .select_related("from_group", "to_group")
        .order_by("-created_at", "-pk")[:CHANGES_SHOWN]
    )
    return render(
        request,
        "dashboard/partner_group.html",
        access.context(
            enrolment=enrolment,
            partner=enrolment.partner,
            group=group,
            terms=terms_words(group, program),
            discount=discount_words(group),
            groups=program_groups(program),
            codes=codes,
            changes=changes,
            move_form=move_form or MoveForm(initial={"group": group.pk}, program_id=program.pk),
            code_form=code_form or CodeForm(),
            stripe_connected=bool(program.stripe_account_id),
        ),
        status=status,
    )


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def partner_group(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    return _partner_page(request, access, _enrolment(access, partner_id))


def _back_to_partner(access: ProgramAccess, enrolment: PartnerProgram, back: str) -> HttpResponse:
    if back == "partners":
        url = reverse("dashboard-partners", kwargs={"program_id": access.program.pk})
        return redirect(f"{url}#partner-{enrolment.partner_id}")
    return redirect("dashboard-partner-group", program_id=access.program.pk, partner_id=enrolment.partner_id)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_group_move(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    enrolment = _enrolment(access, partner_id)
    form = MoveForm(request.POST, program_id=access.program.pk)
    if not form.is_valid():
        return _partner_page(request, access, enrolment, move_form=form, status=400)
    target: PartnerGroup = form.cleaned_data["group"]
    actor = user_actor(request.user)

    def write() -> tuple[GroupChange | None, dict[str, Any] | None, dict[str, Any] | None]:
        before_group = enrolment.group_id or default_group(access.program).pk
        change = partner_move(
            enrolment=enrolment, group=target, move=Move(reason=GroupChange.Reason.OWNER, actor=actor)
        )
        if change is None:
            return None, None, None
        before = enrolment_snapshot(enrolment, group_id=before_group)
        after = {**enrolment_snapshot(enrolment, group_id=target.pk), "group_change_id": change.pk}
        return change, before, after

    try:
        with transaction.atomic():
            change, before, after = write()
            if change is not None:
                _audit(request, access, "enrolment.move", "enrolment", enrolment.pk, before, after)
    except ApiError as refusal:
        form.add_error("group", refusal.message)
        return _partner_page(request, access, enrolment, move_form=form, status=400)
    name = enrolment.partner.name
    if change is None:
        flash.info(request, ALREADY_IN.format(partner=name, group=target.name))
    else:
        flash.success(request, MOVED.format(partner=name, group=target.name))
    return _back_to_partner(access, enrolment, form.cleaned_data.get("back") or "partner")


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_code_add(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    enrolment = _enrolment(access, partner_id)
    form = CodeForm(request.POST)
    if form.is_valid():

        def write() -> tuple[CouponCode, None, dict[str, Any]]:
            code = partner_code_create(
                program=access.program, partner=enrolment.partner, code=form.cleaned_data["code"]
            )
            return code, None, code_snapshot(code)

        try:
            code = _audited(request, access, action="coupon_code.create", object_type="coupon_code", write=write)
        except ApiError as refusal:
            form.add_error("code", refusal.message)
        else:
            flash.success(request, CODE_ADDED.format(code=code.code, partner=enrolment.partner.name))
            return _back_to_partner(access, enrolment, "partner")
    return _partner_page(request, access, enrolment, code_form=form, status=400)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_code_deactivate(request: HttpRequest, access: ProgramAccess, code_id: int) -> HttpResponse:
    code = _code(access, code_id)

    def write() -> tuple[bool, dict[str, Any] | None, dict[str, Any] | None]:
        before = code_snapshot(code)
        changed = code_turn_off(code=code)
        return changed, before, code_snapshot(code)

    try:
        with transaction.atomic():
            changed, before, after = write()
            if changed:
                _audit(request, access, "coupon_code.deactivate", "coupon_code", code.pk, before, after)
    except ApiError as refusal:
        flash.error(request, refusal.message)
        return redirect("dashboard-partner-group", program_id=access.program.pk, partner_id=code.partner_id)
    partner = code.partner.name
    if changed:
        flash.success(request, CODE_DEACTIVATED.format(code=code.code, partner=partner))
    else:
        flash.info(request, CODE_ALREADY_OFF.format(code=code.code))
    return redirect("dashboard-partner-group", program_id=access.program.pk, partner_id=code.partner_id)
