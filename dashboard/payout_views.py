"""The Payouts page (issue 27, the owners' side): a program's minimum payout per currency, previewing and confirming
runs, exporting a run's PayPal and Wise payouts for the owner to pay there, bringing the results back, and marking
payouts paid or failed one by one. Any member reads; owners and admins (program:manage) act. Every change goes
through payouts.services (or payouts.exports, which calls them), which audit who did it ("user:<username>").

A run is looked up through the program in the path and a payout through the run, so another program's or
workspace's id answers 404 exactly like an id that names nothing. A refused action comes back as a message."""

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import messages as flash
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render

from core.currency import Currency, minor_unit_exponent
from core.ids import id_parse
from core.money import minor_units_parse, money
from payouts.exports import (
    RESULTS_MAX_BYTES,
    ImportReport,
    Outcome,
    open_manual_payouts,
    program_commissions_csv,
    program_payouts_csv,
    results_import,
    run_batch_export,
)
from payouts.models import (
    MANUAL_RAILS,
    OPEN_PAYOUT_STATUSES,
    Payout,
    PayoutMinimum,
    PayoutRun,
    PayoutStatus,
    Rail,
)
from payouts.selectors import clawbacks_after_sending
from payouts.services import (
    PayoutError,
    RunAlreadyConfirmed,
    payout_mark_failed,
    payout_mark_paid,
    run_confirm,
    run_preview,
)
from programs.models import Action

from .views import ProgramAccess
from .webhook_views import program_action

RUNS_SHOWN = 50
# Major units: a minimum above a trillion is a typing error, and it keeps the minor units inside a bigint.
AMOUNT_MAX = Decimal(10) ** 12
MARKED_FAILED_CODE = "marked_failed"
REPORT_LINES_SHOWN = 50

MINIMUM_SAVED = "Minimum payout in {currency}: {minimum}{automatic}."
MINIMUM_AUTOMATIC = ", paid by the daily scheduled run without confirming"
AMOUNT_INVALID = "Enter the amount in {currency} as a number with at most {places} decimals, 0 or more."
PREVIEWED = "Run #{id} previewed: {ready} partner{plural} can be paid now, {total}. Nothing is paid until you confirm."
CONFIRMED = "Run #{id} confirmed: {count} payout{plural}, {total}."
CONFIRMED_MANUAL = " Export the PayPal and Wise payouts below, pay them there, then import the results."
NOT_CONFIRMED = "Run #{id} is not confirmed: confirm it before exporting."
NOTHING_TO_EXPORT = "No open {rail} payouts in run #{id}: nothing to export."
MARKED_PAID = "Payout #{id} to {partner} marked paid."
MARKED_FAILED = "Payout #{id} to {partner} marked failed: {amount} is back on their balance and they are told why."
ALREADY_SETTLED = "Payout #{id} was {status} already: nothing changed."
NOT_MANUAL = "Payout #{id} is paid by Stripe: its transfer settles it."
NO_FILE = "Choose the results file (CSV) to import."
IMPORT_REFUSED = "Nothing imported: {reason}"
IMPORTED = "Results imported: {summary}."
REPORT_MORE = "… and {count} more lines."


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def _form_error(request: HttpRequest, form: forms.Form) -> None:
    flash.error(request, "; ".join(str(errors[0]) for errors in form.errors.values()))


class AmountForm(forms.Form):
    currency = forms.ChoiceField(choices=Currency.choices)
    minimum = forms.CharField(max_length=32, required=False, strip=True)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        currency, minimum = cleaned.get("currency"), cleaned.get("minimum")
        cleaned["minimum_cents"] = None
        if currency and minimum:
            cleaned["minimum_cents"] = minor_units_parse(minimum, currency, below=AMOUNT_MAX)
            if cleaned["minimum_cents"] is None:
                places = minor_unit_exponent(currency)
                self.add_error("minimum", AMOUNT_INVALID.format(currency=currency, places=places))
        return cleaned


class MinimumForm(AmountForm):
    minimum = forms.CharField(max_length=32, strip=True)
    automatic = forms.BooleanField(required=False)


class MarkPaidForm(forms.Form):
    reference = forms.CharField(max_length=255, required=False, strip=True)


class MarkFailedForm(forms.Form):
    message = forms.CharField(
        max_length=500, strip=True, error_messages={"required": "Say why the payout failed: the partner is told."}
    )


def _run(access: ProgramAccess, run_id: object) -> PayoutRun:
    """The program's run; 404 for another program's (of this workspace or another) and for junk ids."""
    wanted = id_parse(run_id)
    run = PayoutRun.objects.filter(program=access.program, pk=wanted).first() if wanted is not None else None
    if run is None:
        raise Http404("Payout run not found")
    return run


def _payout(run: PayoutRun, payout_id: object) -> Payout:
    wanted = id_parse(payout_id)
    payout = Payout.objects.filter(run=run, pk=wanted).select_related("partner").first() if wanted is not None else None
    if payout is None:
        raise Http404("Payout not found")
    return payout


def _back(run: PayoutRun) -> HttpResponse:
    return redirect("dashboard-payout-run", program_id=run.program_id, run_id=run.pk)


def _payable(run: PayoutRun) -> int:
    return sum(line["amount_cents"] for line in run.lines if line["ready"])


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


# --- The Payouts page -------------------------------------------------------------------------------------------


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def payouts_page(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    program = access.program
    minimums = {minimum.currency: minimum for minimum in PayoutMinimum.objects.filter(program=program)}
    currencies = [
        {
            "code": currency,
            "minimum": minimums.get(currency),
            "shown": money(minimums[currency].minimum_cents, currency) if currency in minimums else "",
            "typed": (
                f"{Decimal(minimums[currency].minimum_cents).scaleb(-minor_unit_exponent(currency))}"
                if currency in minimums
                else ""
            ),
            "places": minor_unit_exponent(currency),
        }
        for currency in Currency.values
    ]
    runs = [
        {
            "run": run,
            "partners": len(run.lines),
            "ready": sum(1 for line in run.lines if line["ready"]),
            "payable": money(_payable(run), run.currency),
        }
        for run in PayoutRun.objects.filter(program=program).order_by("-created_at", "-pk")[:RUNS_SHOWN]
    ]
    return render(
        request,
        "dashboard/payouts.html",
        access.context(currencies=currencies, runs=runs, runs_shown=RUNS_SHOWN, currency_choices=Currency.values),
    )


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_minimum_save(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = MinimumForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
        return redirect("dashboard-payouts", program_id=access.program.pk)
    currency, minimum_cents = form.cleaned_data["currency"], form.cleaned_data["minimum_cents"]
    automatic = form.cleaned_data["automatic"]
    PayoutMinimum.objects.update_or_create(
        program=access.program,
        currency=currency,
        defaults={"minimum_cents": minimum_cents, "automatic": automatic},
    )
    flash.success(
        request,
        MINIMUM_SAVED.format(
            currency=currency,
            minimum=money(minimum_cents, currency),
            automatic=MINIMUM_AUTOMATIC if automatic else "",
        ),
    )
    return redirect("dashboard-payouts", program_id=access.program.pk)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_run_preview(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = AmountForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
        return redirect("dashboard-payouts", program_id=access.program.pk)
    try:
        run = run_preview(
            program=access.program,
            currency=form.cleaned_data["currency"],
            actor=_actor(request),
            minimum_cents=form.cleaned_data["minimum_cents"],
        )
    except PayoutError as refused:
        flash.error(request, str(refused))
        return redirect("dashboard-payouts", program_id=access.program.pk)
    ready = sum(1 for line in run.lines if line["ready"])
    flash.success(
        request,
        PREVIEWED.format(id=run.pk, ready=ready, plural=_plural(ready), total=money(_payable(run), run.currency)),
    )
    return _back(run)


# --- A run --------------------------------------------------------------------------------------------------------


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def payout_run_page(request: HttpRequest, access: ProgramAccess, run_id: int) -> HttpResponse:
    run = _run(access, run_id)
    currency = run.currency
    lines = [{**line, "amount": money(line["amount_cents"], currency)} for line in run.lines]
    payouts = list(Payout.objects.filter(run=run).select_related("partner").order_by("partner__name", "pk"))
    open_rails = {payout.rail for payout in payouts if payout.status in OPEN_PAYOUT_STATUSES}
    clawbacks = clawbacks_after_sending(payouts)
    return render(
        request,
        "dashboard/payout_run.html",
        access.context(
            run=run,
            lines=lines,
            payable=money(_payable(run), currency),
            ready_count=sum(1 for line in run.lines if line["ready"]),
            minimum=money(run.minimum_cents, currency),
            confirmed=run.status == PayoutRun.Status.CONFIRMED,
            payouts=[
                {
                    "payout": payout,
                    "amount": money(payout.amount_cents, currency),
                    "open": payout.status in OPEN_PAYOUT_STATUSES,
                    "manual": payout.rail in MANUAL_RAILS,
                    # What refunds took back from the partner after the payout left: the owner's to review.
                    "clawed_back": [
                        {
                            "commission_id": clawback.commission_id,
                            "amount": money(clawback.amount_cents, clawback.currency),
                            "at": clawback.created_at,
                            "memo": clawback.memo,
                        }
                        for clawback in clawbacks.get(payout.pk, [])
                    ],
                    "clawed_back_total": money(
                        sum(clawback.amount_cents for clawback in clawbacks.get(payout.pk, [])), currency
                    ),
                }
                for payout in payouts
            ],
            paid_total=money(sum(p.amount_cents for p in payouts if p.status == PayoutStatus.PAID), currency),
            export_rails=[(rail, Rail(rail).label.split(" ")[0]) for rail in MANUAL_RAILS if rail in open_rails],
            has_manual=any(payout.rail in MANUAL_RAILS for payout in payouts),
            audit=list(run.audit.order_by("created_at", "pk")),
        ),
    )


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_run_confirm(request: HttpRequest, access: ProgramAccess, run_id: int) -> HttpResponse:
    run = _run(access, run_id)
    try:
        made = run_confirm(run_id=run.pk, actor=_actor(request))
    except RunAlreadyConfirmed as refused:
        flash.warning(request, str(refused))
        return _back(run)
    except PayoutError as refused:
        flash.error(request, str(refused))
        return _back(run)
    total = money(sum(payout.amount_cents for payout in made), run.currency)
    text = CONFIRMED.format(id=run.pk, count=len(made), plural=_plural(len(made)), total=total)
    if any(payout.rail in MANUAL_RAILS for payout in made):
        text += CONFIRMED_MANUAL
    flash.success(request, text)
    return _back(run)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_run_export(request: HttpRequest, access: ProgramAccess, run_id: int, rail: str) -> HttpResponse:
    """The run's open payouts on a manual rail as the rail's batch file; they become `processing` (a refund no
    longer reduces them)."""
    run = _run(access, run_id)
    if rail not in MANUAL_RAILS:
        raise Http404("No such rail")
    label = Rail(rail).label.split(" ")[0]
    if run.status != PayoutRun.Status.CONFIRMED:
        flash.error(request, NOT_CONFIRMED.format(id=run.pk))
        return _back(run)
    if not open_manual_payouts(run, rail):
        flash.info(request, NOTHING_TO_EXPORT.format(rail=label, id=run.pk))
        return _back(run)
    content = run_batch_export(run_id=run.pk, rail=rail, actor=_actor(request), program_name=access.program.name)
    response = HttpResponse(content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="payout-run-{run.pk}-{rail}.csv"'
    return response


def _uploaded_bytes(upload: UploadedFile[bytes], limit: int) -> bytes:
    """At most limit + 1 bytes of the upload: enough to tell it is too big without reading all of it."""
    data = b""
    for chunk in upload.chunks():
        data += chunk
        if len(data) > limit:
            break
    return data[: limit + 1]


def _flash_report(request: HttpRequest, report: ImportReport) -> None:
    if report.refused:
        flash.error(request, IMPORT_REFUSED.format(reason=report.refused))
        return
    refused = report.count(Outcome.REFUSED)
    (flash.warning if refused else flash.success)(request, IMPORTED.format(summary=report.summary))
    for result in report.lines[:REPORT_LINES_SHOWN]:
        level = flash.error if result.outcome == Outcome.REFUSED else flash.info
        level(request, f"Line {result.line}: {result.text}")
    if len(report.lines) > REPORT_LINES_SHOWN:
        flash.info(request, REPORT_MORE.format(count=len(report.lines) - REPORT_LINES_SHOWN))


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_run_import(request: HttpRequest, access: ProgramAccess, run_id: int) -> HttpResponse:
    run = _run(access, run_id)
    upload = request.FILES.get("results")
    if upload is None:
        flash.error(request, NO_FILE)
        return _back(run)
    report = results_import(data=_uploaded_bytes(upload, RESULTS_MAX_BYTES), run=run, actor=_actor(request))
    _flash_report(request, report)
    return _back(run)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_mark_paid_view(request: HttpRequest, access: ProgramAccess, run_id: int, payout_id: int) -> HttpResponse:
    run = _run(access, run_id)
    payout = _payout(run, payout_id)
    form = MarkPaidForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
    elif payout.rail not in MANUAL_RAILS:
        flash.error(request, NOT_MANUAL.format(id=payout.pk))
    elif payout_mark_paid(payout_id=payout.pk, actor=_actor(request), reference=form.cleaned_data["reference"]):
        flash.success(request, MARKED_PAID.format(id=payout.pk, partner=payout.partner.name))
    else:
        payout.refresh_from_db(fields=["status"])
        flash.warning(request, ALREADY_SETTLED.format(id=payout.pk, status=payout.status))
    return _back(run)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def payout_mark_failed_view(request: HttpRequest, access: ProgramAccess, run_id: int, payout_id: int) -> HttpResponse:
    run = _run(access, run_id)
    payout = _payout(run, payout_id)
    form = MarkFailedForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
    elif payout.rail not in MANUAL_RAILS:
        flash.error(request, NOT_MANUAL.format(id=payout.pk))
    elif payout_mark_failed(
        payout_id=payout.pk, code=MARKED_FAILED_CODE, message=form.cleaned_data["message"], actor=_actor(request)
    ):
        flash.success(
            request,
            MARKED_FAILED.format(
                id=payout.pk, partner=payout.partner.name, amount=money(payout.amount_cents, payout.currency)
            ),
        )
    else:
        payout.refresh_from_db(fields=["status"])
        flash.warning(request, ALREADY_SETTLED.format(id=payout.pk, status=payout.status))
    return _back(run)


# --- Owners' exports --------------------------------------------------------------------------------------------


def _csv_download(rows: Any, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(rows, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def payouts_export(request: HttpRequest, access: ProgramAccess) -> StreamingHttpResponse:
    return _csv_download(program_payouts_csv(access.program), f"program-{access.program.pk}-payouts.csv")


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def commissions_export(request: HttpRequest, access: ProgramAccess) -> StreamingHttpResponse:
    return _csv_download(program_commissions_csv(access.program), f"program-{access.program.pk}-commissions.csv")
