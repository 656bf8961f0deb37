import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.integrity import integrity_checks, integrity_run_record, integrity_verify


class Command(BaseCommand):
    help = (
        "Checks every invariant of the money records (balances and the ledger, sales and their commissions, refunds, "
        "payouts, webhook events; docs/integrity.md). Prints one line per failed check with its count and example "
        "ids, and exits 1 when any fails, 0 when all hold."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
        parser.add_argument("--examples", type=int, default=10, help="Ids shown per failed check (default 10).")
        parser.add_argument("--check", action="append", default=[], help="Run only this check (repeatable).")
        parser.add_argument("--list", action="store_true", help="List the checks and exit.")
        parser.add_argument(
            "--record", action="store_true", help="Store the run (as beat's daily run does) for readiness and admin."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for check in integrity_checks:
                self.stdout.write(f"{check.id}: {check.noun} {check.title}")
            return
        try:
            report = integrity_verify(examples=max(options["examples"], 0), only=options["check"] or None)
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["record"]:
            integrity_run_record(report)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, default=str))
        else:
            for failure in report.failures:
                self.stdout.write(failure.line())
            if options["verbosity"] > 1:
                for check_id, seconds in report.timings.items():
                    self.stdout.write(f"  {check_id}: {seconds:.3f} s")
            verdict = "all held" if report.passed else f"{len(report.failures)} failed"
            self.stdout.write(f"integrity: {len(report.checks)} checks, {verdict} ({report.seconds:.2f} s)")
        if not report.passed:
            # Not CommandError: the lines above already say what failed, and callers (call_command, cron, CI)
            # see a plain non-zero exit status.
            raise SystemExit(1)
