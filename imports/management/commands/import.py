"""manage.py import <platform> FILE... --program ID [--dry-run] [--resume] [--currency CODE]: moves a program in
from another platform (docs/import.md)."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.currency import Currency
from imports.engine import UnknownPlatform, bytes_capped, import_source, platforms, source_digest, source_read
from imports.models import ImportRun
from imports.records import ImportFileError
from programs.models import Program

READ_CHUNK = 1024 * 1024


class Command(BaseCommand):
    help = (
        "Imports partners, links, referrals and commissions from another platform's export files into a program. "
        "Run with --dry-run first: it shows what would be created, matched, skipped and refused, and writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("platform", help="rewardful, firstpromoter, tolt, partnerstack or dub")
        parser.add_argument("files", nargs="+", help="the platform's export files (CSV or JSON)")
        parser.add_argument("--program", type=int, required=True, help="the program's id")
        parser.add_argument("--dry-run", action="store_true", help="show what would happen; write nothing")
        parser.add_argument(
            "--resume",
            action="store_true",
            help="continue an interrupted import of these same files (a plain rerun resumes too; this one insists)",
        )
        parser.add_argument(
            "--currency",
            type=str.upper,
            choices=Currency.values,
            default="",
            help="the currency of a platform whose files carry none (FirstPromoter: the account's currency)",
        )
        parser.add_argument("--batch-size", type=int, default=1000, help="rows per transaction (default 1000)")

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["platform"]
        if name not in platforms():
            raise CommandError(UnknownPlatform(name, sorted(platforms())).message)
        program = Program.objects.filter(pk=options["program"]).first()
        if program is None:
            raise CommandError(f"Program {options['program']} does not exist")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        files = self.read_files(options["files"])
        try:
            source = source_read(name, files, currency=options["currency"])
        except ImportFileError as error:
            raise CommandError(error.message) from None
        if options["resume"] and not options["dry_run"]:
            unfinished = ImportRun.objects.filter(
                program=program, platform=name, files_digest=source_digest(source)
            ).exclude(status=ImportRun.Status.COMPLETE)
            if not unfinished.exists():
                raise CommandError("Nothing to resume: no interrupted import of these files for this program")
        report = import_source(
            program,
            source,
            dry_run=options["dry_run"],
            batch_size=options["batch_size"],
            file_names=[file_name for file_name, _ in files],
        )
        for line in report.lines():
            self.stdout.write(line)

    def read_files(self, paths: list[str]) -> list[tuple[str, bytes]]:
        """The files' names and contents, no more than IMPORT_UPLOAD_MAX_BYTES together (the Import page's limit),
        read in chunks so that a device or pipe (/dev/zero) is refused at the limit rather than read on."""
        limit = settings.IMPORT_UPLOAD_MAX_BYTES
        files: list[tuple[str, bytes]] = []
        total = 0
        for path in paths:
            try:
                with open(path, "rb") as stream:
                    content = bytes_capped(iter(lambda: stream.read(READ_CHUNK), b""), limit=limit - total)
            except OSError as error:
                raise CommandError(f"Cannot read {path}: {error.strerror or error}") from None
            if content is None:
                raise CommandError(
                    f"{path}: the files are larger than {limit:,} bytes together (IMPORT_UPLOAD_MAX_BYTES)"
                )
            total += len(content)
            files.append((Path(path).name, content))
        return files
