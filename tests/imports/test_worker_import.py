"""A confirmed upload crosses processes as in production: the confirmation commits, the import task goes through
Redis to a real Celery worker, which reads the stored files and imports them; the run page shows it complete, with
what the dry run planned."""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from commissions.models import Commission
from imports.models import ImportRun, ImportUpload
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.worker import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

FILES = Path(__file__).parent / "fixtures" / "rewardful"


def test_a_worker_imports_a_confirmed_upload(celery_worker_process):
    program = ProgramFactory(name="Acme", hold_days=30)
    browser = Client()
    browser.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.ADMIN).user)
    page = f"/programs/{program.pk}/import"
    uploads = [
        SimpleUploadedFile(name, (FILES / name).read_bytes())
        for name in ("affiliates.json", "referrals.json", "commissions.json")
    ]
    assert browser.post(page, {"platform": "rewardful", "files": uploads}).status_code == 302
    upload = ImportUpload.objects.get()
    planned = upload.report["counts"]

    confirmed = browser.post(f"{page}/uploads/{upload.pk}/confirm")
    assert confirmed.status_code == 302
    run = ImportRun.objects.get()
    assert wait_for(lambda: ImportRun.objects.get(pk=run.pk).status == ImportRun.Status.COMPLETE, timeout=60), (
        ImportRun.objects.filter(pk=run.pk).values_list("status", "error").first()
    )
    run.refresh_from_db()
    assert run.counts == planned
    assert Commission.objects.filter(program=program).count() == planned["commission"]["created"]
    shown = browser.get(f"{page}/runs/{run.pk}").content.decode()
    assert "complete" in shown.lower()
