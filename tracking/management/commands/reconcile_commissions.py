from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tracking.reconciler import RECONCILE_GRACE, commissions_reconcile


class Command(BaseCommand):
    help = (
        "Settles attributed live sales whose commission was lost (a process killed between storing the sale and "
        "creating its commission): creates the commission, or records why the policy pays none, exactly once. "
        "Celery beat runs this every minute."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--grace-seconds",
            type=int,
            default=int(RECONCILE_GRACE.total_seconds()),
            help="Leave sales younger than this alone: their request may still be running (default %(default)s).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        count = commissions_reconcile(grace=timedelta(seconds=options["grace_seconds"]))
        self.stdout.write(f"Settled {count} sale(s) missing a commission.")
