"""The dashboard's Import page (/programs/<id>/import): an owner or admin uploads another platform's export files,
reads the dry run's report (what would be created, matched, skipped, and every refused row), then confirms, and
the import runs (a Celery task when tasks are queued, in-process otherwise) while its page shows how far it got.

The uploaded files are kept in the database (ImportUpload) between the dry run and the confirmation, limited in
size, and the confirmation runs exactly the rows the owner saw (their digest). An upload or run is looked up
through the program in the path, so another program's or workspace's id answers 404. Members who are neither
owner nor admin get the 403 page."""

from django import forms
from django.conf import settings
from django.contrib import messages as flash
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from core.currency import Currency
from core.ids import id_parse
from imports import services as import_services
from imports.engine import bytes_capped, platforms
from imports.models import ImportRun, ImportUpload
from imports.records import KINDS, ImportFileError
from programs.models import Action

from .views import ProgramAccess
from .webhook_views import program_action

# What one upload may hold: enough for a large program's exports, small enough to keep in a row. The request
# limits let this page's body reach it (settings.LARGE_BODY_PATHS).
UPLOAD_MAX_BYTES = settings.IMPORT_UPLOAD_MAX_BYTES
UPLOAD_MAX_FILES = 10
RUNS_SHOWN = 20
REFUSALS_SHOWN = 500

NO_PLATFORM = "Choose the platform you are moving from."
NO_FILES = "Choose the export files to upload."
TOO_MANY_FILES = f"Upload at most {UPLOAD_MAX_FILES} files at once."
TOO_BIG = f"The files are too large together (at most {UPLOAD_MAX_BYTES // (1024 * 1024)} MB)."
NOT_READ = "Nothing read: {reason}"
BAD_CURRENCY = "Choose a currency the service records, or none."
CONFIRMED = "Import started: this page shows how far it got."
ALREADY_CONFIRMED = "This upload was confirmed already."


class UploadForm(forms.Form):
    platform = forms.ChoiceField(choices=())
    # For a platform whose files carry no currency (Platform.asks_currency): the program's currency there.
    currency = forms.ChoiceField(choices=[("", ""), *Currency.choices], required=False)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        field = self.fields["platform"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(name, platform.label) for name, platform in sorted(platforms().items())]
        field.error_messages["required"] = NO_PLATFORM
        field.error_messages["invalid_choice"] = NO_PLATFORM
        currency = self.fields["currency"]
        currency.error_messages["invalid_choice"] = BAD_CURRENCY


def _platform_rows() -> list[dict[str, object]]:
    return [
        {"name": name, "label": platform.label, "help": platform.export_help, "asks_currency": platform.asks_currency}
        for name, platform in sorted(platforms().items())
    ]


def _page(request: HttpRequest, access: ProgramAccess, *, status: int = 200) -> HttpResponse:
    runs = ImportRun.objects.filter(program=access.program).order_by("-started_at", "-pk")[:RUNS_SHOWN]
    return render(
        request,
        "imports/import.html",
        access.context(
            platforms=_platform_rows(),
            currencies=Currency.values,
            asking=[row["label"] for row in _platform_rows() if row["asks_currency"]],
            runs=runs,
            max_mb=UPLOAD_MAX_BYTES // (1024 * 1024),
        ),
        status=status,
    )


def _read_files(files: list[UploadedFile[bytes]]) -> list[tuple[str, bytes]] | str:
    """The uploaded files' names and contents, or why they are refused (too many, too large together)."""
    if len(files) > UPLOAD_MAX_FILES:
        return TOO_MANY_FILES
    read: list[tuple[str, bytes]] = []
    total = 0
    for upload in files:
        data = bytes_capped(upload.chunks(), limit=UPLOAD_MAX_BYTES - total)
        if data is None:
            return TOO_BIG
        total += len(data)
        read.append(((upload.name or "file").rsplit("/", 1)[-1][:255], data))
    return read


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def import_page(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    """GET: the form and the recent runs. POST: the upload, read and dry-run; then its report to confirm."""
    if request.method != "POST":
        return _page(request, access)
    form = UploadForm(request.POST)
    if not form.is_valid():
        flash.error(request, BAD_CURRENCY if "currency" in form.errors else NO_PLATFORM)
        return _page(request, access, status=400)
    uploaded = request.FILES.getlist("files")
    if not uploaded:
        flash.error(request, NO_FILES)
        return _page(request, access, status=400)
    files = _read_files(uploaded)
    if isinstance(files, str):
        flash.error(request, files)
        return _page(request, access, status=400)
    try:
        upload = import_services.upload_create(
            program=access.program,
            platform=form.cleaned_data["platform"],
            files=files,
            currency=form.cleaned_data["currency"],
            actor=request.user,
        )
    except ImportFileError as error:
        flash.error(request, NOT_READ.format(reason=error.message))
        return _page(request, access, status=400)
    return redirect("imports-upload", program_id=access.program.pk, upload_id=upload.pk)


def _upload(access: ProgramAccess, upload_id: object) -> ImportUpload:
    wanted = id_parse(upload_id)
    upload = ImportUpload.objects.filter(program=access.program, pk=wanted).first() if wanted is not None else None
    if upload is None:
        raise Http404("Upload not found")
    return upload


def _counts_rows(counts: dict[str, dict[str, int]]) -> list[dict[str, object]]:
    return [{"kind": kind, **counts.get(kind, {})} for kind in KINDS]


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD"))
def upload_page(request: HttpRequest, access: ProgramAccess, upload_id: int) -> HttpResponse:
    """The dry run's report of an upload, with the button that runs it."""
    upload = _upload(access, upload_id)
    refusals = upload.report.get("refusals", [])
    platform = platforms().get(upload.platform)
    return render(
        request,
        "imports/upload.html",
        access.context(
            upload=upload,
            label=platform.label if platform else upload.platform,
            files=list(upload.files.values_list("name", flat=True)) or (upload.run.file_names if upload.run else []),
            counts=_counts_rows(upload.report.get("counts", {})),
            balances=upload.report.get("balances", []),
            deactivated=upload.report.get("deactivated", []),
            link_steps=upload.report.get("link_steps", []),
            changes=upload.report.get("changes", []),
            refusals=refusals[:REFUSALS_SHOWN],
            refusals_more=max(0, len(refusals) - REFUSALS_SHOWN),
        ),
    )


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def upload_confirm(request: HttpRequest, access: ProgramAccess, upload_id: int) -> HttpResponse:
    """Runs the upload (imports.services.upload_confirm); a second confirmation of the same upload starts nothing."""
    upload = _upload(access, upload_id)
    confirmation = import_services.upload_confirm(program=access.program, upload_id=upload.pk, actor=request.user)
    if confirmation.started:
        flash.success(request, CONFIRMED)
    else:
        flash.info(request, ALREADY_CONFIRMED)
    return redirect("imports-run", program_id=access.program.pk, run_id=confirmation.run_id)


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD"))
def run_page(request: HttpRequest, access: ProgramAccess, run_id: int) -> HttpResponse:
    wanted = id_parse(run_id)
    run = ImportRun.objects.filter(program=access.program, pk=wanted).first() if wanted is not None else None
    if run is None:
        raise Http404("Import not found")
    platform = platforms().get(run.platform)
    return render(
        request,
        "imports/run.html",
        access.context(
            run=run,
            label=platform.label if platform else run.platform,
            counts=_counts_rows(run.counts),
            refusals=run.refusals[:REFUSALS_SHOWN],
            refusals_more=max(0, len(run.refusals) - REFUSALS_SHOWN),
            refresh=run.state == "running",
        ),
    )
