from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from programs.selectors import program_live_key_get
from programs.services import program_key_mark_rotation


class Command(BaseCommand):
    help = "Marks a program's live key for rotation. A past deadline retires it now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("program_id", type=int)
        parser.add_argument("--deadline", required=True, help="ISO 8601 with offset, e.g. 2026-12-31T00:00:00Z")

    def handle(self, *args: Any, program_id: int, deadline: str, **options: Any) -> None:
        try:
            when = datetime.fromisoformat(deadline.replace("Z", "+00:00"))
        except ValueError:
            raise CommandError(f"--deadline must be ISO 8601, got {deadline!r}") from None
        if timezone.is_naive(when):
            raise CommandError("--deadline needs a UTC offset, e.g. 2026-12-31T00:00:00+00:00")
        key = program_live_key_get(program_id=program_id)
        if key is None:
            raise CommandError(f"Program {program_id} has no live key")
        program_key_mark_rotation(key=key, deadline=when)
        state = "retired now" if when <= timezone.now() else "warning until the deadline"
        self.stdout.write(
            f"Program {program_id}: live key {key.masked} marked for rotation by {when.isoformat()} ({state})."
        )
