"""The Import page: upload, dry run, confirm, run page. Owners and admins only; another workspace's program, upload
or run answers 404; a POST without CSRF is refused; a refused upload writes nothing."""

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard import import_views as views
from imports.models import ImportRun, ImportUpload
from imports.platforms import PLATFORMS
from imports.platforms.base import Platform
from imports.records import ImportFileError
from programs.models import Partner, Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.imports.engine_sources import small_source

pytestmark = [pytest.mark.django_db]

EXPORT = b"fake export\n"


def fake_read(files):
    for name, content in files:
        if content != EXPORT:
            raise ImportFileError(f"{name}: not a Fake export")
    return small_source(platform="fake")


@pytest.fixture(autouse=True)
def fake_platform(monkeypatch):
    monkeypatch.setitem(
        PLATFORMS,
        "fake",
        Platform(
            name="fake",
            label="Fake",
            link_param="fk",
            stripe_metadata_keys=(),
            export_help="Fake: Settings > Export",
            reader=fake_read,
        ),
    )


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def client_of(program, role: str, **options) -> Client:
    browser = Client(**options)
    browser.force_login(MembershipFactory.create(workspace=program.workspace, role=role).user)
    return browser


def page(program) -> str:
    return f"/programs/{program.pk}/import"


def files(*contents: bytes) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(f"export{n}.csv", content) for n, content in enumerate(contents, start=1)]


def flashed(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_upload_dry_run_confirm_and_run_page(program, role, django_capture_on_commit_callbacks):
    browser = client_of(program, role)
    form = browser.get(page(program))
    assert form.status_code == 200
    assert b"Move in from another platform" in form.content and b'value="fake"' in form.content

    response = browser.post(page(program), {"platform": "fake", "files": files(EXPORT)})
    upload = ImportUpload.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{page(program)}/uploads/{upload.pk}"
    assert not Partner.objects.filter(workspace=program.workspace).exists(), "the dry run writes nothing"
    assert not ImportRun.objects.exists()

    report = browser.get(response["Location"])
    assert report.status_code == 200
    text = report.content.decode()
    assert "Dry run: Fake" in text and "partners.csv line 99" in text and "email is missing" in text
    assert 'data-label="Would create">3<' in text

    with django_capture_on_commit_callbacks(execute=True):
        confirmed = browser.post(f"{page(program)}/uploads/{upload.pk}/confirm")
    run = ImportRun.objects.get()
    assert confirmed.status_code == 302 and confirmed["Location"] == f"{page(program)}/runs/{run.pk}"
    assert run.status == ImportRun.Status.COMPLETE
    assert Partner.objects.filter(workspace=program.workspace).count() == 3
    shown = browser.get(confirmed["Location"]).content.decode()
    assert "complete" in shown and "Import #" in shown and "email is missing" in shown
    assert not upload.files.exists(), "the uploaded exports are not kept once imported"
    assert "export1.csv" in browser.get(f"{page(program)}/uploads/{upload.pk}").content.decode()

    # A second confirmation starts nothing.
    with django_capture_on_commit_callbacks(execute=True):
        again = browser.post(f"{page(program)}/uploads/{upload.pk}/confirm")
    assert again.status_code == 302 and ImportRun.objects.count() == 1
    assert "This upload was confirmed already." in flashed(again)


def test_members_get_403_and_other_workspaces_404(program):
    member = client_of(program, Role.MEMBER)
    assert member.get(page(program)).status_code == 403
    assert member.post(page(program), {"platform": "fake", "files": files(EXPORT)}).status_code == 403
    assert not ImportUpload.objects.exists()

    owner = client_of(program, Role.OWNER)
    owner.post(page(program), {"platform": "fake", "files": files(EXPORT)})
    upload = ImportUpload.objects.get()
    stranger_program = ProgramFactory()
    stranger = client_of(stranger_program, Role.OWNER)
    # Another workspace's program: the dashboard's 403 page, as every program page answers it.
    assert stranger.get(page(program)).status_code == 403
    # Their own program's path with this upload's id: 404, like an id that names nothing.
    assert stranger.get(f"{page(stranger_program)}/uploads/{upload.pk}").status_code == 404
    assert stranger.post(f"{page(stranger_program)}/uploads/{upload.pk}/confirm").status_code == 404
    assert owner.get(f"{page(program)}/runs/999999").status_code == 404
    assert not ImportRun.objects.exists()


def test_signed_out_is_sent_to_sign_in(program):
    response = Client().get(page(program))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_csrf_is_checked(program):
    browser = client_of(program, Role.OWNER, enforce_csrf_checks=True)
    assert browser.post(page(program), {"platform": "fake", "files": files(EXPORT)}).status_code == 403
    assert not ImportUpload.objects.exists()


def test_refused_uploads_write_nothing(program, monkeypatch):
    browser = client_of(program, Role.OWNER)
    no_platform = browser.post(page(program), {"platform": "nope", "files": files(EXPORT)})
    assert no_platform.status_code == 400 and views.NO_PLATFORM in flashed(no_platform)
    no_files = browser.post(page(program), {"platform": "fake"})
    assert no_files.status_code == 400 and views.NO_FILES in flashed(no_files)
    wrong = browser.post(page(program), {"platform": "fake", "files": files(b"id,name\n")})
    assert wrong.status_code == 400
    assert "Nothing read: export1.csv: not a Fake export" in flashed(wrong)
    monkeypatch.setattr(views, "UPLOAD_MAX_BYTES", 5)
    too_big = browser.post(page(program), {"platform": "fake", "files": files(EXPORT)})
    assert too_big.status_code == 400 and views.TOO_BIG in flashed(too_big)
    assert not ImportUpload.objects.exists() and not ImportRun.objects.exists()


def test_a_rewardful_export_through_the_page(program, django_capture_on_commit_callbacks):
    from pathlib import Path

    from commissions.models import Commission

    folder = Path(__file__).parent / "fixtures" / "rewardful"
    uploads = [
        SimpleUploadedFile(name, (folder / name).read_bytes())
        for name in ("affiliates.json", "referrals.json", "commissions.json")
    ]
    browser = client_of(program, Role.OWNER)
    response = browser.post(page(program), {"platform": "rewardful", "files": uploads})
    assert response.status_code == 302
    upload = ImportUpload.objects.get()
    planned = upload.report["counts"]
    assert planned["partner"]["created"] > 10 and upload.report["refusals"], "the fixtures plant bad rows"
    shown = browser.get(response["Location"]).content.decode()
    assert "Dry run: Rewardful" in shown and "affiliates.json item" in shown
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(f"{page(program)}/uploads/{upload.pk}/confirm")
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.COMPLETE and run.counts == planned
    assert run.file_names == ["affiliates.json", "referrals.json", "commissions.json"]
    assert Commission.objects.filter(program=program).count() == planned["commission"]["created"]


def test_an_upload_never_confirmed_loses_its_files_after_a_week(program):
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from imports.engine import UNCONFIRMED_UPLOAD_KEPT
    from imports.models import ImportUploadFile
    from imports.tasks import unconfirmed_uploads_prune_task

    browser = client_of(program, Role.OWNER)
    for _ in range(2):
        browser.post(page(program), {"platform": "fake", "files": [SimpleUploadedFile("export.csv", EXPORT)]})
    old, recent = ImportUpload.objects.order_by("pk")
    ImportUpload.objects.filter(pk=old.pk).update(created_at=timezone.now() - UNCONFIRMED_UPLOAD_KEPT - timedelta(1))
    run = ImportRun.objects.create(program=program, platform="fake", files_digest="d")
    confirmed_long_ago = ImportUpload.objects.create(
        program=program,
        platform="fake",
        files_digest="d",
        run=run,
    )
    ImportUpload.objects.filter(pk=confirmed_long_ago.pk).update(created_at=timezone.now() - timedelta(days=30))

    assert unconfirmed_uploads_prune_task.apply().get() == 1
    assert set(ImportUpload.objects.values_list("pk", flat=True)) == {recent.pk, confirmed_long_ago.pk}
    assert not ImportUploadFile.objects.filter(upload_id=old.pk).exists()
    assert browser.get(f"{page(program)}/uploads/{old.pk}").status_code == 404
    assert settings.CELERY_BEAT_SCHEDULE["prune-import-uploads"]["task"] == "imports.prune_uploads"


def test_groups_and_codes_show_on_the_dry_run_and_the_run(program, django_capture_on_commit_callbacks):
    from pathlib import Path

    folder = Path(__file__).parent / "fixtures" / "rewardful_groups"
    uploads = [SimpleUploadedFile(path.name, path.read_bytes()) for path in sorted(folder.glob("*.json"))]
    browser = client_of(program, Role.OWNER)
    response = browser.post(page(program), {"platform": "rewardful", "files": uploads})
    assert response.status_code == 302
    upload = ImportUpload.objects.get()
    assert upload.report["counts"]["group"]["created"] == 2 and upload.report["counts"]["code"]["created"] == 3
    shown = browser.get(response["Location"]).content.decode()
    assert '<tr data-kind="group"><td data-label="Kind">Groups</td>' in shown
    assert '<tr data-kind="move"><td data-label="Kind">Partners placed in groups</td>' in shown
    assert '<tr data-kind="code"><td data-label="Kind">Coupon codes</td>' in shown
    with django_capture_on_commit_callbacks(execute=True):
        confirmed = browser.post(f"{page(program)}/uploads/{upload.pk}/confirm")
    run_page = browser.get(confirmed["Location"]).content.decode()
    assert '<tr data-kind="code"><td data-label="Kind">Coupon codes</td>' in run_page


def test_an_export_without_groups_shows_no_group_rows(program):
    from pathlib import Path

    folder = Path(__file__).parent / "fixtures" / "rewardful"
    uploads = [SimpleUploadedFile("affiliates.json", (folder / "affiliates.json").read_bytes())]
    browser = client_of(program, Role.OWNER)
    response = browser.post(page(program), {"platform": "rewardful", "files": uploads})
    shown = browser.get(response["Location"]).content.decode()
    assert 'data-kind="partner"' in shown and 'data-kind="group"' not in shown and 'data-kind="code"' not in shown
