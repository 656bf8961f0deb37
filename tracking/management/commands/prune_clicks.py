from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tracking.retention import raw_clicks_prune


class Command(BaseCommand):
    help = (
        "Drops raw clicks of the UTC days older than N days, after folding them into the rollups: the reports keep "
        "their totals. Leads, sales, commissions, refunds and readiness keep working; explain shows the clicks "
        "that remain. Beat runs it daily when RAW_CLICK_RETENTION_DAYS is set."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than-days",
            type=int,
            default=settings.RAW_CLICK_RETENTION_DAYS,
            help="Keep this many days of raw clicks (default RAW_CLICK_RETENTION_DAYS: %(default)s).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than_days"]
        if days < 1:
            raise CommandError("Give --older-than-days N (at least 1), or set RAW_CLICK_RETENTION_DAYS.")
        result = raw_clicks_prune(older_than_days=days)
        self.stdout.write(f"Dropped {result.deleted} raw click(s) before {result.before.isoformat()}.")
