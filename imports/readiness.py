"""The readiness checklist's "Import" check (insight.readiness): the program's last import from another
platform, what came over, and what to check after switching. Informational: it passes, and warns only when an
import was interrupted (then what is here is whole batches, not the whole import). None when nothing was ever
imported. One query, whatever the program holds."""

from typing import Any

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery
from django.utils import timezone

from core.times import utc_text
from programs.models import Partner, Program

from .engine import BASIC_KINDS, LINK, link_param_steps, platforms
from .models import STALE_AFTER, ImportedRecord, ImportRun
from .records import KINDS

CHECK_ID = "import"
TITLE = "Import"


def _last_run(program: Program) -> Any:
    """The program's latest run, with how many partners its platform brought over have not signed in yet, and
    whether any run of the program stopped before its end (failed, or silent for STALE_AFTER)."""
    uninvited = (
        ImportedRecord.objects.filter(program_id=OuterRef("program_id"), platform=OuterRef("platform"), kind="partner")
        .filter(Exists(Partner.objects.filter(pk=OuterRef("object_id"), account__isnull=True)))
        .order_by()
        .values("program_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    stopped = ImportRun.objects.filter(program_id=OuterRef("program_id")).filter(
        Q(status=ImportRun.Status.FAILED)
        | Q(status=ImportRun.Status.RUNNING, updated_at__lt=timezone.now() - STALE_AFTER)
    )
    return (
        ImportRun.objects.filter(program=program)
        .annotate(uninvited=Subquery(uninvited, output_field=IntegerField()), interrupted_any=Exists(stopped))
        .order_by("-started_at", "-pk")
        .first()
    )


# How the check names the kinds the platform's export gives only sometimes (named when any came over).
_SOMETIMES = {"group": ("group", "groups"), "code": ("coupon code", "coupon codes")}


def _came_over(counts: dict[str, dict[str, int]], verb: str = "came over") -> str:
    parts = []
    for kind in KINDS:
        kind_counts = counts.get(kind, {})
        here = kind_counts.get("created", 0) + kind_counts.get("matched", 0)
        if kind in BASIC_KINDS:
            parts.append(f"{here} {kind}{'' if here == 1 else 's'}")
        elif kind in _SOMETIMES and here:
            one, many = _SOMETIMES[kind]
            parts.append(f"{here} {one if here == 1 else many}")
    refused = sum(counts.get(kind, {}).get("refused", 0) for kind in KINDS)
    return ", ".join(parts) + f" {verb}" + (f" ({refused} row(s) refused)" if refused else "")


def after_switching_steps(program: Program, *, platform: str, uninvited: int, links: int) -> list[str]:
    """What to check after moving in from the platform: its link parameters (`links`: how many links the import
    brought), Stripe, the partners."""
    entry = platforms().get(platform)
    label = entry.label if entry else platform
    steps = link_param_steps(program, platform=platform, links=links)
    if not program.stripe_account_id:
        steps.append("Connect Stripe (the Stripe tab) so renewals of imported customers are attributed")
    if uninvited:
        steps.append(
            f"Invite the {uninvited} imported partner(s) who have not signed in yet (Partners & links); their payout "
            f"emails from {label} are in their notes"
        )
    return steps


def import_check(program: Program) -> dict[str, str] | None:
    """The check's fields (id, status, title, detail, next_step) or None when the program never imported."""
    run = _last_run(program)
    if run is None:
        return None
    entry = platforms().get(run.platform)
    label = entry.label if entry else run.platform
    when = utc_text(run.finished_at or run.started_at)
    if run.is_interrupted or run.interrupted_any:
        return {
            "id": CHECK_ID,
            "status": "warn",
            "title": TITLE,
            "detail": (
                f"An import was interrupted (last: {label}, started {utc_text(run.started_at)}, {run.state}): only "
                f"whole batches are here, not the whole import. So far: {_came_over(run.counts, 'planned')}"
            ),
            "next_step": (
                "Run the same import again (the Import page, or manage.py import … --resume): it continues where it "
                "stopped and creates nothing twice."
            ),
        }
    if run.status == ImportRun.Status.RUNNING:
        detail = f"Importing from {label} (started {utc_text(run.started_at)}): {_came_over(run.counts, 'planned')}"
    else:
        detail = f"Last import: {label}, {when}: {_came_over(run.counts)}"
    link_counts = run.counts.get(LINK, {})
    links = link_counts.get("created", 0) + link_counts.get("matched", 0)
    steps = after_switching_steps(program, platform=run.platform, uninvited=run.uninvited or 0, links=links)
    return {
        "id": CHECK_ID,
        "status": "pass",
        "title": TITLE,
        "detail": detail,
        "next_step": ("After switching: " + "; ".join(steps) + ".") if steps else "",
    }
