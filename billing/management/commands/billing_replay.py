"""Processes a program's stored billing events again: `manage.py billing_replay --program 42 --event evt_01… …`
(the platform's event ids) or `--failed` (every event of the program that failed). Processing is idempotent: a
payment recorded already is not counted twice, a refund applied already is not applied again."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.models import BillingEvent
from billing.services import billing_events_replay
from programs.models import Program


class Command(BaseCommand):
    help = "Process a program's stored billing platform events again (by event id, or every failed one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--program", type=int, required=True)
        parser.add_argument("--event", action="append", default=[], help="the platform's event id (repeatable)")
        parser.add_argument("--failed", action="store_true", help="every event of the program that failed")

    def handle(self, *args: Any, **options: Any) -> None:
        program = Program.objects.filter(pk=options["program"]).first()
        if program is None:
            raise CommandError(f"No program {options['program']}")
        if not options["event"] and not options["failed"]:
            raise CommandError("Name the events (--event ID, repeatable) or pass --failed")
        events = BillingEvent.objects.filter(program=program)
        if options["event"]:
            events = events.filter(event_id__in=options["event"])
            missing = sorted(set(options["event"]) - set(events.values_list("event_id", flat=True)))
            if missing:
                raise CommandError(f"No stored event of program {program.pk}: {', '.join(missing)}")
        else:
            events = events.filter(status=BillingEvent.Status.FAILED)
        queued = billing_events_replay(program=program, event_pks=list(events.values_list("pk", flat=True)))
        self.stdout.write(f"Queued {queued} event(s) for processing again.")
        for event in BillingEvent.objects.filter(program=program, pk__in=events.values("pk")).order_by("pk"):
            self.stdout.write(f"{event.platform} {event.event_type} {event.event_id}: {event.status} {event.outcome}")
