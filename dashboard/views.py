"""The dashboard's pages: server-rendered, with a little JavaScript that reads the dashboard API.

Every program page resolves its program through program_for_action with tracking:list, so the rules match the
API's: signed out -> sign-in page, unknown program -> 404, no active membership -> 403. Buttons that call an
owner/admin-only API are rendered only for roles whose actions allow them; the API checks again."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import wraps
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import OuterRef, Q, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe
from rest_framework.exceptions import ValidationError

from commissions.models import Commission, CommissionStatus
from commissions.selectors import ROW_RELATED, commission_sale_words, commissions_with_money
from core.api.query import present
from core.errors import ForbiddenError, NotFoundError
from core.ids import page_number_parse
from core.money import money
from core.pagination import CappedPaginator
from core.urls import public_url
from insight.explain import explanation_get
from programs.api.calllog import LogsQuerySerializer
from programs.calllog import api_calls_list
from programs.models import (
    PERCENT_TYPES,
    RECURRING_TYPES,
    ROLE_ACTIONS,
    Action,
    KeyRotation,
    Membership,
    PartnerProgram,
    Program,
    ProgramKey,
    ReferralLink,
)
from programs.permissions import program_for_action
from programs.selectors import membership_get, program_live_key_get
from tracking.api.queries import ExplainQuerySerializer
from tracking.models import ClickEvent, SaleEvent
from tracking.rollups import (
    Watermarks,
    clicks_not_on_counters,
    partner_commission_cents,
    rollup_read,
    sales_not_on_counters,
    with_clicks_not_counted,
    with_sales_not_counted,
)
from tracking.selectors.clicks import COUNTED_CLICKS
from tracking.services.tracker import tracker_script_tag

if TYPE_CHECKING:
    from commissions.selectors import CommissionWithMoney

COMMISSIONS_PER_PAGE = 25
PARTNERS_PER_PAGE = 20
EVENTS_PER_PAGE = 25
LOGS_PER_PAGE = 50
# The request log's status filter choices (an exact code may be typed in the query too).
LOG_STATUS_CLASSES = ("2xx", "4xx", "5xx")
DEFAULT_RANGE_DAYS = 30
# The events API's eventType values, with their labels.
EVENT_TYPES = {"click": "Clicks", "lead": "Leads", "conversion": "Sales (conversions)"}
# Printed in snippets instead of a key: a page never shows a real key except right after regenerating it.
PLACEHOLDER_KEY = "aff_..."


@dataclass(frozen=True)
class ProgramAccess:
    program: Program
    role: str
    actions: frozenset[str]

    def context(self, **extra: Any) -> dict[str, Any]:
        return {
            "program": self.program,
            "role": self.role,
            "actions": sorted(self.actions),
            "can_manage": Action.PROGRAM_MANAGE in self.actions,
            "can_regenerate": Action.PROGRAM_REGENERATE_KEY in self.actions,
            "can_test": Action.TRACKING_TEST in self.actions,
            **extra,
        }


def program_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signs in, checks tracking:list on the program in the path, and hands the view a ProgramAccess."""

    @login_required
    @require_safe
    @wraps(view)
    def wrapper(request: HttpRequest, program_id: int) -> HttpResponse:
        access = program_access(request, program_id=program_id, action=Action.TRACKING_LIST)
        return access if isinstance(access, HttpResponse) else view(request, access)

    return wrapper


def program_access(request: HttpRequest, *, program_id: int, action: str) -> ProgramAccess | HttpResponse:
    """The signed-in user's access to the program when their role allows `action`; Http404 for an unknown
    program; the 403 page (as a response) for no active membership, or a role without the action."""
    try:
        program = program_for_action(user=request.user, program_id=program_id, action=Action.TRACKING_LIST)
    except NotFoundError:
        raise Http404("Program not found") from None
    except ForbiddenError:
        return render(request, "dashboard/forbidden.html", status=403)
    membership = membership_get(user=request.user, program=program)
    assert membership is not None  # program_for_action refused anyone without one
    access = ProgramAccess(
        program=program, role=membership.role, actions=ROLE_ACTIONS.get(membership.role, frozenset())
    )
    if action not in access.actions:
        # A member of the workspace: they may see the program, so the page says what their role lacks.
        return render(request, "dashboard/forbidden.html", {"program": program, "role": access.role}, status=403)
    return access


def commission_terms(program: Program) -> str:
    """The program's commission policy in one sentence, e.g. "20% of every sale except renewals"."""
    rate = f"{program.commission_rate.normalize():f}"
    percent = program.commission_type in PERCENT_TYPES
    amount = f"{rate}% of" if percent else f"{rate} (smallest currency unit) on"
    if program.commission_type not in RECURRING_TYPES:
        return f"{amount} every sale except renewals"
    months = program.duration_months
    period = (
        "for life"
        if months == 0
        else f"for {months} month{'s' if months != 1 else ''} after the customer's first commissioned sale"
    )
    return f"{amount} every sale, renewals included, {period}"


def _base_url(request: HttpRequest) -> str:
    return public_url(request, "/").rstrip("/")


# Said on the page when a date parameter is set aside (`refused` lists each one and why).
RANGE_SET_ASIDE = "Set aside: {refused}. Showing {start} to {end} (UTC)."
EVENTS_DATES_SET_ASIDE = "Set aside: {refused}. Showing events {shown} (UTC)."
# The range parameters of the overview and events pages, each with the name the dashboard API gives it (a user
# who read the API docs tries that one on the page too).
DATE_PARAMETERS = {"from": "dateFrom", "to": "dateTo"}


def _day(value: str) -> date | None:
    """A UTC day written YYYY-MM-DD (fromisoformat alone would also read 20260105 or 2026-W01-1)."""
    if len(value) != 10:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


@dataclass(frozen=True)
class DatesGiven:
    start: date | None
    end: date | None
    # What was set aside and why, e.g. 'dateFrom=2026-13-45 is not a date (YYYY-MM-DD)'; "" when nothing was.
    refused: str


def _dates_given(request: HttpRequest) -> DatesGiven:
    """?from=&to= (or ?dateFrom=&dateTo=). A value that is no date, or a start after the end, is set aside and
    named, so that the page says what it shows instead of quietly showing something else."""
    days: dict[str, date | None] = {}
    refused: list[str] = []
    for name, api_name in DATE_PARAMETERS.items():
        given_as = name if name in request.GET or api_name not in request.GET else api_name
        value = request.GET.get(given_as, "").strip()
        days[name] = _day(value)
        if value and days[name] is None:
            refused.append(f"{given_as}={value} is not a date (YYYY-MM-DD)")
    start, end = days["from"], days["to"]
    if start is not None and end is not None and start > end:
        refused.append(f"the start {start} is after the end {end}")
        start = end = None
    return DatesGiven(start=start, end=end, refused="; ".join(refused))


def _date_range(request: HttpRequest) -> tuple[date, date]:
    """The overview's range, as the performance API reads it: both days given, or DEFAULT_RANGE_DAYS from the one
    day given, else the last DEFAULT_RANGE_DAYS including today (UTC). A range with a day set aside is the default
    one, and the page says so."""
    given = _dates_given(request)
    span = timedelta(days=DEFAULT_RANGE_DAYS - 1)
    if given.refused:
        end = timezone.now().date()
        start = end - span
    elif given.start is not None and given.end is not None:
        start, end = given.start, given.end
    elif given.start is not None:
        start, end = given.start, given.start + span
    elif given.end is not None:
        start, end = given.end - span, given.end
    else:
        end = timezone.now().date()
        start = end - span
    if given.refused:
        flash.warning(request, RANGE_SET_ASIDE.format(refused=given.refused, start=start, end=end))
    return start, end


def _latest_live(model: type[ClickEvent | SaleEvent], time_field: str, *counted: Q) -> Subquery:
    """The time of the program's latest live event of the model (one indexed probe per program)."""
    rows = model.objects.filter(*counted, program=OuterRef("pk"), is_test=False).order_by(f"-{time_field}")
    return Subquery(rows.values(time_field)[:1])


@login_required
@require_safe
def program_list(request: HttpRequest) -> HttpResponse:
    user = request.user
    assert user.is_authenticated  # login_required
    memberships = {
        m.workspace_id: m for m in Membership.objects.filter(user=user, is_active=True).select_related("workspace")
    }
    programs = (
        Program.objects.filter(workspace_id__in=memberships)
        .select_related("workspace")
        .annotate(
            # Each program's state at a glance: is tracking live (the latest counted live click and sale)?
            last_click=_latest_live(ClickEvent, "click_timestamp", COUNTED_CLICKS),
            last_sale=_latest_live(SaleEvent, "sale_date"),
        )
        .order_by("name", "pk")
    )
    rows = [{"program": program, "role": memberships[program.workspace_id].role} for program in programs]
    return render(request, "dashboard/program_list.html", {"rows": rows})


@program_page
def program_overview(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program = access.program
    start, end = _date_range(request)
    live_key = program_live_key_get(program_id=program.pk)
    facts = {
        "commission": commission_terms(program),
        "live_key": live_key,
        "partners": PartnerProgram.objects.filter(program=program).count(),
        "active_links": ReferralLink.objects.filter(program=program, is_active=True).count(),
    }
    return render(
        request,
        "dashboard/program_overview.html",
        access.context(
            facts=facts,
            date_from=start.isoformat(),
            date_to=end.isoformat(),
            performance_url=f"/api/tracking/performance/{program.pk}",
            status_url=f"/api/tracking/status/{program.pk}",
        ),
    )


@program_page
def program_events(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    event_type = request.GET.get("type", "")
    given = _dates_given(request)
    start, end = given.start, given.end
    if given.refused:
        shown = f"from {start}" if start else f"until {end}" if end else "of any date"
        flash.warning(request, EVENTS_DATES_SET_ASIDE.format(refused=given.refused, shown=shown))
    return render(
        request,
        "dashboard/program_events.html",
        access.context(
            event_types=EVENT_TYPES.items(),
            event_type=event_type if event_type in EVENT_TYPES else "",
            date_from=start.isoformat() if start else "",
            date_to=end.isoformat() if end else "",
            page=page_number_parse(request.GET.get("page")),
            page_size=EVENTS_PER_PAGE,
            events_url=f"/api/tracking/events/{access.program.pk}",
        ),
    )


def integration_snippets(*, base_url: str, program: Program) -> dict[str, str]:
    """Copy-paste snippets with this server's address and the program's id; the key is a placeholder."""
    tracker = tracker_script_tag(base_url=base_url, program_id=program.pk)
    lead = (
        f"curl -X POST {base_url}/api/v1/track/lead \\\n"
        f'  -H "Authorization: Bearer {PLACEHOLDER_KEY}" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        '  -d \'{"click_id": "<svc_click_id cookie>", "customer_key": "<your user id>", '
        '"email": "ada@example.com"}\''
    )
    sale = (
        f"curl -X POST {base_url}/api/v1/track/sale \\\n"
        f'  -H "Authorization: Bearer {PLACEHOLDER_KEY}" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        '  -d \'{"transaction_id": "<payment id>", "amount_cents": 4900, "currency": "USD", '
        '"customer_key": "<your user id>"}\''
    )
    return {"tracker": tracker, "lead": lead, "sale": sale}


@program_page
def program_readiness(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program = access.program
    return render(
        request,
        "dashboard/program_readiness.html",
        access.context(
            snippets=integration_snippets(base_url=_base_url(request), program=program),
            readiness_url=f"/api/tracking/readiness/{program.pk}",
            verification_url=f"/api/tracking/run-verification/{program.pk}",
        ),
    )


@program_page
def program_key(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program = access.program
    now = timezone.now()
    keys = {key.mode: key for key in ProgramKey.objects.filter(program=program)}
    rows = [
        {
            "mode": mode,
            "label": label,
            "key": keys.get(mode),
            "retired": KeyRotation.of(keys.get(mode), now).retired,
        }
        for mode, label in ProgramKey.Mode.choices
    ]
    return render(
        request,
        "dashboard/program_key.html",
        access.context(rows=rows, live=rows[0], regenerate_url=f"/api/programs/{program.pk}/regenerate-key"),
    )


@program_page
def program_partners(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program = access.program
    # Ordered by the revenue counter alone: the sales since the last rollup run are added to the revenue shown
    # below but not to the order, which may therefore lag one run behind it.
    enrolments = (
        PartnerProgram.objects.filter(program=program)
        .select_related("partner")
        .order_by("-revenue_cents", "partner__name", "pk")
    )

    # Counters and rollups are read together with the clicks and sales not in them yet (tracking.rollups), again
    # if a rollup run commits meanwhile.
    def read(marks: Watermarks) -> dict[str, Any]:
        page = Paginator(enrolments, PARTNERS_PER_PAGE).get_page(request.GET.get("page"))
        partner_ids = [enrolment.partner_id for enrolment in page]
        links = list(ReferralLink.objects.filter(program=program, partner_id__in=partner_ids).order_by("short_link"))
        # Links that no enrolled partner owns (no partner, or a partner never enrolled): clicks on them are refused
        # or unattributed, so they are worth seeing. Shown once, on the first page.
        unenrolled: list[ReferralLink] = []
        if page.number == 1:
            enrolled = PartnerProgram.objects.filter(program=program).values("partner_id")
            unenrolled = list(
                ReferralLink.objects.filter(program=program)
                .filter(Q(partner__isnull=True) | ~Q(partner_id__in=enrolled))
                .select_related("partner")
                .order_by("short_link")
            )
        more = clicks_not_on_counters(marks, program_id=program.pk)
        by_partner: dict[int | None, list[dict[str, Any]]] = {}
        by_link: dict[int | None, list[dict[str, Any]]] = {}
        for row in more:
            by_partner.setdefault(row["partner_id"], []).append(row)
            by_link.setdefault(row["link_id"], []).append(row)
        for link in (*links, *unenrolled):
            counted = with_clicks_not_counted(link.clicks, link.last_clicked, by_link.get(link.pk, []))
            link.clicks, link.last_clicked = counted.clicks, counted.last_clicked
        links_by_partner: dict[int | None, list[ReferralLink]] = {}
        for link in links:
            links_by_partner.setdefault(link.partner_id, []).append(link)
        # Commission money is what the commissions still pay after refunds (from the rollups), never a counter.
        payable = partner_commission_cents(marks, program_id=program.pk, partner_ids=partner_ids)
        sales_more = sales_not_on_counters(marks, program_id=program.pk)
        partners = []
        for enrolment in page:
            sold = with_sales_not_counted(
                enrolment.sales, enrolment.revenue_cents, sales_more.get(enrolment.partner_id)
            )
            partners.append(
                {
                    "enrolment": enrolment,
                    "partner": enrolment.partner,
                    "clicks": with_clicks_not_counted(
                        enrolment.clicks, None, by_partner.get(enrolment.partner_id, [])
                    ).clicks,
                    "sales": sold.sales,
                    "revenue": money(sold.revenue_cents),
                    "commission": money(payable.get(enrolment.partner_id, 0)),
                    "links": links_by_partner.get(enrolment.partner_id, []),
                }
            )
        return {"page": page, "partners": partners, "unenrolled_links": unenrolled}

    return render(request, "dashboard/program_partners.html", access.context(**rollup_read(read)))


@program_page
def program_commissions(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program = access.program
    status = request.GET.get("status", "")
    commissions = commissions_with_money(Commission.objects.filter(program=program).select_related(*ROW_RELATED))
    if status in CommissionStatus.values:
        commissions = commissions.filter(status=status)
    else:
        status = ""
    paginator: Paginator[CommissionWithMoney] = CappedPaginator(
        commissions.order_by("-created_at", "-pk"), COMMISSIONS_PER_PAGE
    )
    page = paginator.get_page(request.GET.get("page"))
    rows = [
        {
            "commission": commission,
            "amount": money(commission.amount_cents, commission.currency),
            "payable": money(commission.payable_cents, commission.currency),
            "sale_amount": commission_sale_words(commission),  # "Bonus: <name>" for a bonus (no sale)
            "refunded": money(commission.sale_refunded_cents, commission.currency)
            if commission.sale_refunded_cents
            else "",
            # commissions.selectors.clawed_back_cents: nothing for a commission cancelled by a refund.
            "clawed_back": money(commission.clawed_back_cents, commission.currency)
            if commission.clawed_back_cents
            else "",
        }
        for commission in page
    ]
    return render(
        request,
        "dashboard/program_commissions.html",
        access.context(page=page, rows=rows, status=status, statuses=CommissionStatus.choices),
    )


def _first_error(error: ValidationError) -> str:
    """The first message of a serializer's errors (the API answers the same one)."""
    detail: Any = error.detail
    while isinstance(detail, dict | list):
        detail = next(iter(detail.values())) if isinstance(detail, dict) else detail[0]
    return str(detail)


LOG_FILTERS = ("status", "route", "error_code", "since", "until")


@program_page
def program_logs(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    """The request log, newest first, LOGS_PER_PAGE a page, filtered like GET /api/tracking/logs/:programId.
    Rows show the key's mask only: the log never holds a key."""
    given = {name: request.GET.get(name, "").strip() for name in LOG_FILTERS}
    query = present({**given, "cursor": request.GET.get("cursor", ""), "limit": str(LOGS_PER_PAGE)})
    serializer = LogsQuerySerializer(data=query)
    rows: list[dict[str, Any]] = []
    error = ""
    next_query = ""
    status = 200
    if serializer.is_valid():
        rows, next_cursor = api_calls_list(program_id=access.program.pk, **serializer.validated_data)
        if next_cursor:
            next_query = urlencode({**present(given), "cursor": next_cursor})
    else:
        error = _first_error(ValidationError(serializer.errors))
        status = 400
    return render(
        request,
        "dashboard/program_logs.html",
        access.context(
            rows=rows,
            filters=given,
            status_classes=LOG_STATUS_CLASSES,
            error=error,
            paged=bool(request.GET.get("cursor")),
            first_query=urlencode(present(given)),
            next_query=next_query,
        ),
        status=status,
    )


EXPLAIN_SELECTOR_LABELS = {
    "transaction_id": "Sale (transaction_id)",
    "click_id": "Customer (click_id)",
    "customer_key": "Customer (customer_key)",
}


@program_page
def program_explain(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    """Attribution explained (insight.explain): for ?transaction_id=, ?click_id= or ?customer_key=; with
    none, the form to ask (?by=<selector>&value=)."""
    given = present({name: request.GET.get(name, "").strip() for name in EXPLAIN_SELECTOR_LABELS})
    by = request.GET.get("by", "")
    if not given and by in EXPLAIN_SELECTOR_LABELS:  # the page's own form: ?by=<selector>&value=
        given = present({by: request.GET.get("value", "").strip()})
    selector, value = next(iter(given.items()), ("transaction_id", ""))
    explanation: dict[str, Any] | None = None
    error = ""
    status = 200
    if given:
        serializer = ExplainQuerySerializer(data=given)
        if not serializer.is_valid():
            error, status = _first_error(ValidationError(serializer.errors)), 400
        else:
            try:
                explanation = explanation_get(program=access.program, **serializer.validated_data)
            except NotFoundError as exc:
                error, status = exc.message, 404
    return render(
        request,
        "dashboard/program_explain.html",
        access.context(
            selectors=EXPLAIN_SELECTOR_LABELS.items(),
            selector=selector,
            value=value,
            explanation=explanation,
            error=error,
        ),
        status=status,
    )
