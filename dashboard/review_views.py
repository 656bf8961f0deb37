"""The dashboard's review tab (fraud rules): a program's held commissions, its latest hold decisions and its
flagged clicks, read by any member (tracking:list); releasing and voiding held commissions, and the program's
fraud rule settings, for roles with program:manage. Every write goes through commissions.services or
fraud.config, which record who decided ("user:<username>").

A commission is looked up through the program in the path, so another program's commission answers 404 like one
that never existed. A refused action (the commission's state changed meanwhile) comes back as a message on the
page, never an error page."""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render

from commissions.models import Commission, CommissionStatus
from commissions.selectors import (
    OWNER_HOLD,
    commission_sale_words,
    held_commissions_list,
    review_partners,
    reviews_recent,
)
from commissions.services import CommissionActionRefused, commission_release, commission_void
from core import messages as core_messages
from core.errors import BadRequestError
from core.ids import id_parse
from core.money import money
from core.pagination import CappedPaginator
from fraud.config import RulesRefused, program_rules_read, rule_reset, rules_update
from fraud.rules import SPECS, Rule
from programs.models import Action
from tracking.selectors.clicks import MARKED_KINDS, VISITOR_SHOWN, flagged_clicks_list

from . import messages
from .review_forms import ReleaseForm, RuleForm, VoidForm
from .views import ProgramAccess
from .webhook_views import program_action

HELD_PER_PAGE = 20
CLICKS_PER_PAGE = 25
DECISIONS_SHOWN = 20
# The query parameters of each list; a pager keeps the other list's.
HELD_PARAMS = ("rule", "partner")
CLICK_PARAMS = ("kind", "click_partner", "link")
LINK_CODE_MAX = 255


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def _held_filters(request: HttpRequest) -> dict[str, str]:
    """The held list's filters from the query; an unknown value is no filter."""
    rule = request.GET.get("rule", "")
    partner = request.GET.get("partner", "")
    return {
        "rule": rule if rule in SPECS or rule == OWNER_HOLD else "",
        "partner": partner if id_parse(partner) else "",
    }


def _click_filters(request: HttpRequest) -> dict[str, str]:
    kind = request.GET.get("kind", "")
    partner = request.GET.get("click_partner", "")
    link = request.GET.get("link", "").strip()
    return {
        "kind": kind if kind in MARKED_KINDS else "",
        "click_partner": partner if id_parse(partner) else "",
        "link": link if len(link) <= LINK_CODE_MAX else "",
    }


def _query(params: dict[str, str], **more: str) -> str:
    return urlencode({name: value for name, value in {**params, **more}.items() if value})


def _held_row(commission: Commission) -> dict[str, Any]:
    return {
        "commission": commission,
        "amount": money(commission.amount_cents, commission.currency),
        "sale_amount": commission_sale_words(commission),
        "rule_label": Rule(commission.hold_rule).label if commission.hold_rule in SPECS else "",
    }


def _rule_labels() -> dict[str, str]:
    return {rule: Rule(rule).label for rule in SPECS}


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def program_review(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program_id = access.program.pk
    held_filters = _held_filters(request)
    click_filters = _click_filters(request)

    held = held_commissions_list(
        program_id=program_id,
        rule=held_filters["rule"] or None,
        partner_id=id_parse(held_filters["partner"]),
    )
    held_page = CappedPaginator(held, HELD_PER_PAGE).get_page(request.GET.get("held_page"))
    kind = click_filters["kind"]
    clicks = flagged_clicks_list(
        program_id=program_id,
        kind=kind or None,
        partner_id=id_parse(click_filters["click_partner"]),
        link_code=click_filters["link"] or None,
    )
    clicks_page = CappedPaginator(clicks, CLICKS_PER_PAGE).get_page(request.GET.get("clicks_page"))
    # Each list's pager and filter form keep the other list as the user left it.
    held_state = {**held_filters, "held_page": request.GET.get("held_page", "")}
    click_state = {**click_filters, "clicks_page": request.GET.get("clicks_page", "")}
    return render(
        request,
        "dashboard/program_review.html",
        access.context(
            held_page=held_page,
            held_rows=[_held_row(commission) for commission in held_page],
            held_filters=held_filters,
            held_query=_query({**held_filters, **click_state}),
            held_filtered=any(held_filters.values()),
            click_page=clicks_page,
            click_rows=[{"click": click, "visitor": click.visitor_hash[:VISITOR_SHOWN]} for click in clicks_page],
            click_filters=click_filters,
            click_query=_query({**click_filters, **held_state}),
            click_filtered=any(click_filters.values()),
            keep_for_held=[(name, value) for name, value in click_state.items() if value],
            keep_for_clicks=[(name, value) for name, value in held_state.items() if value],
            back="?" + request.GET.urlencode() if request.GET else "",
            decisions=reviews_recent(program_id=program_id, limit=DECISIONS_SHOWN),
            partners=review_partners(program_id=program_id),
            rule_labels=_rule_labels(),
            owner_hold=OWNER_HOLD,
            click_kinds=MARKED_KINDS.items(),
            visitor_shown=VISITOR_SHOWN,
            decisions_shown=DECISIONS_SHOWN,
        ),
    )


def _held_commission(access: ProgramAccess, commission_id: int) -> Commission:
    """The program's commission, or 404 (another program's too)."""
    commission = (
        Commission.objects.filter(program=access.program, pk=commission_id).select_related("partner").first()
        if id_parse(commission_id)
        else None
    )
    if commission is None:
        raise Http404("Commission not found")
    return commission


def _back_to_review(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    """The review page as the user left it: its filters and pages come back in the form's `back` field."""
    back = request.POST.get("back", "")
    response = redirect("dashboard-review", program_id=access.program.pk)
    if back.startswith("?") and 1 < len(back) <= 2000 and "\n" not in back and "\r" not in back:
        response["Location"] += "?" + QueryDict(back[1:]).urlencode()
    return response


def _form_error(form: ReleaseForm | VoidForm) -> str:
    return str(next(iter(form.errors.values()))[0])


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def review_release(request: HttpRequest, access: ProgramAccess, commission_id: int) -> HttpResponse:
    commission = _held_commission(access, commission_id)
    form = ReleaseForm(request.POST)
    if not form.is_valid():
        flash.error(request, _form_error(form))
        return _back_to_review(request, access)
    try:
        released = commission_release(
            commission_id=commission.pk, actor=_actor(request), reason=form.cleaned_data["reason"]
        )
    except CommissionActionRefused as refused:
        flash.error(request, str(refused))
        return _back_to_review(request, access)
    if released.status == CommissionStatus.APPROVED:
        flash.success(
            request, messages.COMMISSION_RELEASED_CREDITED.format(id=released.pk, partner=commission.partner.name)
        )
    elif released.status == CommissionStatus.PENDING:
        flash.success(
            request,
            messages.COMMISSION_RELEASED_PENDING.format(
                id=released.pk, hold_until=released.hold_until.strftime("%Y-%m-%d %H:%M")
            ),
        )
    else:
        flash.success(request, messages.COMMISSION_RELEASED.format(id=released.pk))
    return _back_to_review(request, access)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def review_void(request: HttpRequest, access: ProgramAccess, commission_id: int) -> HttpResponse:
    """Voids a held commission. One no longer on hold (released or voided meanwhile, perhaps by a colleague) is
    left alone: this page's Void is a decision on the hold, not on a commission already decided."""
    commission = _held_commission(access, commission_id)
    form = VoidForm(request.POST)
    if not form.is_valid():
        flash.error(request, _form_error(form))
        return _back_to_review(request, access)
    try:
        commission_void(
            commission_id=commission.pk, reason=form.cleaned_data["reason"], actor=_actor(request), only_held=True
        )
    except CommissionActionRefused as refused:
        not_held = str(refused) == core_messages.COMMISSION_NOT_HELD
        flash.error(
            request, messages.COMMISSION_NOT_HELD_ANY_MORE.format(id=commission.pk) if not_held else str(refused)
        )
    else:
        flash.success(request, messages.COMMISSION_VOIDED.format(id=commission.pk))
    return _back_to_review(request, access)


def _rule_forms(access: ProgramAccess, data: QueryDict | None = None) -> list[RuleForm]:
    rules = program_rules_read(access.program.pk)
    return [RuleForm(data, rule=rule, config=rules.get(rule)) for rule in SPECS]


def _rules_page(request: HttpRequest, access: ProgramAccess, forms: list[RuleForm], status: int = 200) -> HttpResponse:
    return render(
        request,
        "dashboard/program_review_rules.html",
        access.context(rows=[{"form": form, "label": Rule(form.rule).label} for form in forms]),
        status=status,
    )


@program_action(Action.TRACKING_LIST, ("GET", "HEAD", "POST"))
def review_rules(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    """The program's fraud rules: any member reads them; a POST (program:manage) saves the rules that changed,
    all or none."""
    if request.method != "POST":
        return _rules_page(request, access, _rule_forms(access))
    if Action.PROGRAM_MANAGE not in access.actions:
        return render(request, "dashboard/forbidden.html", {"program": access.program, "role": access.role}, status=403)
    forms = _rule_forms(access, request.POST)
    if not all([form.is_valid() for form in forms]):
        flash.error(request, messages.RULES_NOT_SAVED)
        return _rules_page(request, access, forms, status=400)
    changes = {form.rule: form.changes() for form in forms}
    try:
        changed = rules_update(
            program_id=access.program.pk, changes={rule: change for rule, change in changes.items() if change}
        )
    except RulesRefused as refused:
        for form in forms:
            if form.rule in refused.refusals:
                form.add_error(None, refused.refusals[form.rule])
        flash.error(request, messages.RULES_NOT_SAVED)
        return _rules_page(request, access, forms, status=400)
    saved = [Rule(rule).label for rule in changed]
    flash.success(request, messages.RULES_SAVED.format(rules=", ".join(saved)) if saved else messages.RULES_UNCHANGED)
    return redirect("dashboard-review-rules", program_id=access.program.pk)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def review_rule_reset(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    # Cut short: an unknown rule's name is repeated in the message.
    rule = request.POST.get("rule", "")[:64]
    try:
        rule_reset(program_id=access.program.pk, rule=rule)
    except BadRequestError as refused:
        flash.error(request, refused.message)
    else:
        flash.success(request, messages.RULE_RESET.format(rule=Rule(rule).label))
    return redirect("dashboard-review-rules", program_id=access.program.pk)
