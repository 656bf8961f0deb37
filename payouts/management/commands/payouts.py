"""`manage.py payouts`: payout runs from the command line, as the dashboard and the agent API run them, through
payouts.services (audited as "command")."""

from argparse import ArgumentTypeError
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.currency import Currency
from core.ids import integer_parse
from core.money import money
from payouts.exports import batch_file
from payouts.models import MANUAL_RAILS, Payout, PayoutRun
from payouts.services import PayoutError, run_confirm, run_export, run_preview
from payouts.stripe_rail import payouts_reconcile
from programs.models import Program

ACTOR = "command"


def _whole_number(text: str) -> int:
    """An argument in ASCII digits: argparse's type=int runs int(), which reads other scripts' digits ("١" is 1)."""
    number = integer_parse(text)
    if number is None:
        raise ArgumentTypeError(f"{text!r} is not a whole number (ASCII digits)")
    return number


class Command(BaseCommand):
    help = (
        "Payout runs: preview a program's run in a currency, confirm it (one payout per ready partner, debited on "
        "the ledger), list and show runs, export a run's PayPal or Wise payouts as the rail's batch file, and "
        "reconcile Stripe payouts left unsettled (beat does this too)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="{preview,confirm,list,show,reconcile,export}"
        )

        preview = actions.add_parser("preview", help="Preview a run: who is owed what; nothing is paid")
        preview.add_argument("--program", type=_whole_number, required=True, metavar="ID", help="Program id")
        preview.add_argument("--currency", required=True, help=f"One of {', '.join(Currency.values)}")
        preview.add_argument(
            "--minimum",
            type=_whole_number,
            metavar="MINOR_UNITS",
            help="Pay only partners owed at least this (minor units); default: the program's minimum payout",
        )

        confirm = actions.add_parser("confirm", help="Confirm a previewed run: the payouts are made")
        confirm.add_argument("run_id", type=_whole_number, metavar="RUN_ID")

        listing = actions.add_parser("list", help="List runs, newest first")
        listing.add_argument("--program", type=_whole_number, metavar="ID", help="Only this program's runs")
        listing.add_argument("--limit", type=_whole_number, default=50, metavar="N", help="At most N runs (default 50)")

        show = actions.add_parser("show", help="A run's lines, payouts and audit trail")
        show.add_argument("run_id", type=_whole_number, metavar="RUN_ID")

        actions.add_parser("reconcile", help="Settle or resend Stripe payouts whose answer was never recorded")

        export = actions.add_parser(
            "export", help="Write a confirmed run's open PayPal or Wise payouts as the rail's batch file"
        )
        export.add_argument("run_id", type=_whole_number, metavar="RUN_ID")
        export.add_argument("--rail", required=True, choices=[rail.value for rail in MANUAL_RAILS])
        export.add_argument("--output", required=True, type=Path, metavar="FILE", help="Where the CSV is written")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "preview":
            self.preview(options["program"], options["currency"], options["minimum"])
        elif action == "confirm":
            self.confirm(options["run_id"])
        elif action == "list":
            self.list_runs(options["program"], options["limit"])
        elif action == "show":
            self.show(_run(options["run_id"]))
        elif action == "reconcile":
            self.reconcile()
        else:
            self.export(options["run_id"], options["rail"], options["output"])

    def preview(self, program_id: int, currency: str, minimum: int | None) -> None:
        program = Program.objects.filter(pk=program_id).first()
        if program is None:
            raise CommandError(f"Program {program_id} does not exist")
        code = currency.strip().upper()
        if code not in Currency.values:
            raise CommandError(f"Unknown currency {currency!r}: use one of {', '.join(Currency.values)}")
        try:
            run = run_preview(program=program, currency=code, actor=ACTOR, minimum_cents=minimum)
        except PayoutError as refused:
            raise CommandError(str(refused)) from None
        self.show(run)
        if any(line["ready"] for line in run.lines):
            self.stdout.write(f"Confirm with: manage.py payouts confirm {run.pk}")

    def confirm(self, run_id: int) -> None:
        run = _run(run_id)
        try:
            made = run_confirm(run_id=run.pk, actor=ACTOR)
        except PayoutError as refused:
            raise CommandError(str(refused)) from None
        total = sum(payout.amount_cents for payout in made)
        self.stdout.write(f"Run #{run.pk} confirmed: {len(made)} payout(s), {money(total, run.currency)}.")
        for payout in made:
            self.stdout.write(f"  {_payout_line(payout)}")
        manual = sorted({payout.rail for payout in made if payout.rail in MANUAL_RAILS})
        for rail in manual:
            self.stdout.write(f"Export with: manage.py payouts export {run.pk} --rail {rail} --output FILE")

    def list_runs(self, program_id: int | None, limit: int) -> None:
        runs = PayoutRun.objects.select_related("program").order_by("-pk")
        if program_id is not None:
            if not Program.objects.filter(pk=program_id).exists():
                raise CommandError(f"Program {program_id} does not exist")
            runs = runs.filter(program_id=program_id)
        shown = list(runs[: max(limit, 1)])
        if not shown:
            self.stdout.write("No payout runs.")
        for run in shown:
            ready = [line for line in run.lines if line["ready"]]
            total = money(sum(line["amount_cents"] for line in ready), run.currency)
            self.stdout.write(
                f"#{run.pk}  {run.status:<9}  {run.currency}  program #{run.program_id} {run.program.name}  "
                f"{len(ready)} payable, {total}  created {run.created_at.isoformat()}"
            )

    def show(self, run: PayoutRun) -> None:
        ready = [line for line in run.lines if line["ready"]]
        total = money(sum(line["amount_cents"] for line in ready), run.currency)
        self.stdout.write(
            f"Payout run #{run.pk} ({run.status}) of program #{run.program_id} in {run.currency}, minimum "
            f"{money(run.minimum_cents, run.currency)}: {len(ready)} payable, {total}"
        )
        if not run.lines:
            self.stdout.write("  Nobody is owed the minimum.")
        for line in run.lines:
            state = "ready" if line["ready"] else f"not paid: {line['reason']}"
            rail = line["rail"] or "no payout account"
            self.stdout.write(
                f"  partner #{line['partner_id']} {line['partner']}: {money(line['amount_cents'], run.currency)} "
                f"by {rail} ({state})"
            )
        payouts = list(run.payouts.select_related("partner").order_by("pk"))
        if payouts:
            self.stdout.write("Payouts:")
            for payout in payouts:
                self.stdout.write(f"  {_payout_line(payout)}")
        self.stdout.write("Audit:")
        for entry in run.audit.order_by("created_at", "pk"):
            detail = f": {entry.detail}" if entry.detail else ""
            self.stdout.write(f"  {entry.created_at.isoformat()} {entry.action} by {entry.actor}{detail}")

    def reconcile(self) -> None:
        outcomes = payouts_reconcile()
        if not outcomes:
            self.stdout.write("No Stripe payout left unsettled.")
            return
        counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
        self.stdout.write(f"Reconciled Stripe payouts: {counts}.")

    def export(self, run_id: int, rail: str, output: Path) -> None:
        run = _run(run_id)
        if run.status != PayoutRun.Status.CONFIRMED:
            raise CommandError(f"Payout run #{run.pk} is not confirmed: confirm it before exporting")
        # The payouts turn `processing` only if the file is written: one transaction around both.
        with transaction.atomic():
            payouts = run_export(run_id=run.pk, rail=rail, actor=ACTOR)
            if not payouts:
                raise CommandError(f"No open {rail} payouts in run #{run.pk}: nothing to export")
            content = batch_file(payouts, rail=rail, program_name=run.program.name)
            try:
                output.write_bytes(content)
            except OSError as failed:
                raise CommandError(f"Could not write {output}: {failed.strerror or failed}") from None
        total = money(sum(payout.amount_cents for payout in payouts), run.currency)
        self.stdout.write(f"Wrote {len(payouts)} {rail} payout(s), {total}, to {output}.")


def _run(run_id: int) -> PayoutRun:
    run = PayoutRun.objects.select_related("program").filter(pk=run_id).first()
    if run is None:
        raise CommandError(f"Payout run {run_id} does not exist")
    return run


def _payout_line(payout: Payout) -> str:
    return (
        f"payout #{payout.pk} partner #{payout.partner_id} {payout.partner.name}: "
        f"{money(payout.amount_cents, payout.currency)} by {payout.rail} to {payout.destination} ({payout.status})"
    )
