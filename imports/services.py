"""An upload on the dashboard's Import page: its files read and dry-run, kept with the report the owner reads, then
confirmed once. The engine (imports.engine) does the reading and importing; these keep the upload and start its run."""

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from core.tasks import enqueue
from programs.models import Program

from .engine import import_source, platforms, run_prepare, source_digest, source_read
from .models import ImportUpload, ImportUploadFile
from .tasks import upload_import_task

# Who uploads or confirms: the dashboard's signed-in member (request.user).
Actor = AbstractBaseUser | AnonymousUser


def upload_create(
    *, program: Program, platform: str, files: list[tuple[str, bytes]], currency: str, actor: Actor
) -> ImportUpload:
    """Reads the files as the platform's export, dry-runs them into the program and keeps them with the report, for
    the confirmation to run exactly those rows. `currency` is kept only for a platform that asks for one.
    Raises ImportFileError when the files cannot be read (nothing is kept)."""
    if not platforms()[platform].asks_currency:
        currency = ""
    source = source_read(platform, files, currency=currency)
    report = import_source(program, source, dry_run=True)
    with transaction.atomic():
        upload = ImportUpload.objects.create(
            program=program,
            platform=platform,
            actor_id=actor.pk,
            files_digest=source_digest(source),
            currency=currency,
            size=sum(len(content) for _, content in files),
            report={
                "counts": report.counts_dict(),
                "refusals": [[r.where, r.kind, r.reason] for r in report.refusals],
                **report.summary(),
            },
        )
        ImportUploadFile.objects.bulk_create(
            [
                ImportUploadFile(upload=upload, position=position, name=name, content=content)
                for position, (name, content) in enumerate(files)
            ]
        )
    return upload


@dataclass(frozen=True)
class UploadConfirmation:
    run_id: int
    # False when the upload was confirmed before: its run is the one already started, and nothing starts now.
    started: bool


def upload_confirm(*, program: Program, upload_id: int, actor: Actor) -> UploadConfirmation:
    """Runs the program's upload: its run is made (or the interrupted run of the same rows resumed) and the task
    queued once this commits. The upload's row lock makes two confirmations at once start one run. Raises
    ImportUpload.DoesNotExist for an upload not of this program."""
    with transaction.atomic():
        upload = ImportUpload.objects.select_for_update().get(program=program, pk=upload_id)
        if upload.run_id is not None:
            return UploadConfirmation(run_id=upload.run_id, started=False)
        run = run_prepare(
            program=program,
            platform=upload.platform,
            digest=upload.files_digest,
            actor=actor,
            file_names=list(upload.files.values_list("name", flat=True)),
        )
        upload.run = run
        upload.save(update_fields=["run"])
        transaction.on_commit(lambda: enqueue(upload_import_task, upload.pk))
    return UploadConfirmation(run_id=run.pk, started=True)
