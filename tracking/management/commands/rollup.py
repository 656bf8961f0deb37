from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tracking.rollups import rollups_catch_up, rollups_verify


class Command(BaseCommand):
    help = (
        "update: folds every recorded event into the daily rollups the reports read (beat does this every "
        "ROLLUP_INTERVAL_SECONDS). verify: recounts the raw events and compares them with the rollups; exits 1 "
        "on a difference."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["update", "verify"])

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "update":
            runs = rollups_catch_up()
            folded = {kind: sum(run.folded.get(kind, 0) for run in runs) for kind in ("click", "lead", "sale")}
            recounted = sum(run.recounted_days for run in runs)
            summary = ", ".join(f"{count} {kind}(s)" for kind, count in folded.items())
            self.stdout.write(f"Folded in {summary} in {len(runs)} run(s); recounted {recounted} changed day(s).")
            return
        problems = rollups_verify()
        for problem in problems:
            self.stdout.write(problem)
        if problems:
            raise CommandError(f"{len(problems)} rollup row(s) differ from a recount.")
        self.stdout.write("The rollups equal a recount of the events.")
