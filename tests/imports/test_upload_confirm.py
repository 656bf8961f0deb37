"""imports.services: an upload is kept with its dry run's report, and its confirmation starts one run however many
times, or at once, it is confirmed."""

import threading
from unittest import mock

import pytest

from imports import services
from imports.models import ImportRun, ImportUpload
from imports.records import ImportFileError
from tests.factories import ProgramFactory, UserFactory
from tests.helpers import run_together, wait_for_lock_waiters
from tests.imports.test_dashboard_upload import EXPORT, fake_platform  # noqa: F401 (its fixture applies here)

FILES = [("partners.csv", EXPORT)]


def upload_of(program, user) -> ImportUpload:
    return services.upload_create(program=program, platform="fake", files=FILES, currency="EUR", actor=user)


@pytest.mark.django_db
def test_an_upload_keeps_its_files_and_report_and_no_currency_its_platform_does_not_ask():
    program, user = ProgramFactory(), UserFactory()
    upload = upload_of(program, user)
    assert (upload.program, upload.platform, upload.actor, upload.currency) == (program, "fake", user, "")
    assert list(upload.files.values_list("name", "position")) == [("partners.csv", 0)]
    assert upload.size == len(EXPORT) and upload.report["counts"]["partner"]["created"] == 3
    assert upload.report["refusals"] == [["partners.csv line 99", "partner", "email is missing"]]
    assert not ImportRun.objects.exists(), "the dry run starts nothing"


@pytest.mark.django_db
def test_files_it_cannot_read_keep_nothing():
    with pytest.raises(ImportFileError, match="not a Fake export"):
        services.upload_create(
            program=ProgramFactory(), platform="fake", files=[("x.csv", b"id\n")], currency="", actor=UserFactory()
        )
    assert not ImportUpload.objects.exists()


@pytest.mark.django_db
def test_a_second_confirmation_starts_nothing(django_capture_on_commit_callbacks):
    program, user = ProgramFactory(), UserFactory()
    upload = upload_of(program, user)
    with django_capture_on_commit_callbacks() as first_callbacks:
        first = services.upload_confirm(program=program, upload_id=upload.pk, actor=user)
    with django_capture_on_commit_callbacks() as second_callbacks:
        second = services.upload_confirm(program=program, upload_id=upload.pk, actor=user)
    run = ImportRun.objects.get()
    assert first == services.UploadConfirmation(run_id=run.pk, started=True)
    assert second == services.UploadConfirmation(run_id=run.pk, started=False)
    assert (len(first_callbacks), len(second_callbacks)) == (1, 0), "the task is queued once"
    assert (run.actor, run.file_names, run.status) == (user, ["partners.csv"], ImportRun.Status.RUNNING)


@pytest.mark.django_db
def test_another_programs_upload_is_not_found():
    upload = upload_of(ProgramFactory(), UserFactory())
    with pytest.raises(ImportUpload.DoesNotExist):
        services.upload_confirm(program=ProgramFactory(), upload_id=upload.pk, actor=UserFactory())
    assert not ImportRun.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_confirmations_at_once_start_one_run():
    program, user = ProgramFactory(), UserFactory()
    upload = upload_of(program, user)
    holding = threading.Event()  # the first confirmation holds the upload's lock and is making the run
    rival_done = threading.Event()
    prepare = services.run_prepare

    def prepare_while_the_rival_queues(**kwargs):
        holding.set()
        wait_for_lock_waiters(1, or_until=rival_done.is_set)
        return prepare(**kwargs)

    def confirm(n: int) -> services.UploadConfirmation:
        if n > 0:
            assert holding.wait(timeout=30)
        try:
            return services.upload_confirm(program=program, upload_id=upload.pk, actor=user)
        finally:
            if n > 0:
                rival_done.set()

    with (
        mock.patch.object(services, "run_prepare", side_effect=prepare_while_the_rival_queues),
        mock.patch.object(services, "enqueue") as enqueue,
    ):
        first, second = run_together(2, confirm)

    run = ImportRun.objects.get()
    assert (first.started, second.started) == (True, False)
    assert first.run_id == second.run_id == run.pk
    enqueue.assert_called_once_with(services.upload_import_task, upload.pk)
