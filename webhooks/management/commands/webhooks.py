from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from webhooks.fanout import webhook_events_prune, webhooks_sweep


class Command(BaseCommand):
    help = (
        "sweep: fans out events not yet fanned out and queues the deliveries that are due, as many as the webhook "
        "queue has room for (WEBHOOK_QUEUE_MAX; beat does this every WEBHOOK_SWEEP_SECONDS; without Redis, run it "
        "to make retries). prune: drops events older than "
        "WEBHOOK_EVENT_RETENTION_DAYS with their deliveries and log (beat does this hourly)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["sweep", "prune"])

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "sweep":
            fanned, queued = webhooks_sweep()
            self.stdout.write(f"Fanned out {fanned} event(s); queued {queued} due delivery(ies).")
            return
        dropped = webhook_events_prune()
        self.stdout.write(f"Dropped {dropped} event(s) past the retention period.")
