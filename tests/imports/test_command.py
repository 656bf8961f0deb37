from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from imports.models import ImportRun
from imports.platforms import PLATFORMS
from imports.platforms.base import Platform
from imports.records import ImportFileError
from programs.models import Partner
from tests.factories import ProgramFactory
from tests.imports.engine_sources import small_source

pytestmark = pytest.mark.django_db


def fake_read(files):
    for name, content in files:
        if content != b"fake export\n":
            raise ImportFileError(f"{name}: not a Fake export")
    return small_source(platform="fake")


@pytest.fixture
def fake_platform(monkeypatch):
    platform = Platform(
        name="fake",
        label="Fake",
        link_param="fk",
        stripe_metadata_keys=("fake_ref",),
        export_help="Fake: Settings > Export",
        reader=fake_read,
    )
    monkeypatch.setitem(PLATFORMS, "fake", platform)
    return platform


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "partners.csv"
    path.write_bytes(b"fake export\n")
    return path


def run(*args):
    out = StringIO()
    call_command("import", *map(str, args), stdout=out)
    return out.getvalue()


def test_dry_run_prints_the_report_and_writes_nothing(fake_platform, export):
    program = ProgramFactory()
    out = run("fake", export, "--program", program.pk, "--dry-run")
    assert "Dry run (nothing written): fake" in out
    assert "  partners: 3 to create, 0 matched, 0 skipped, 1 refused" in out
    assert "partners.csv line 99: email is missing" in out
    assert not Partner.objects.filter(workspace=program.workspace).exists()
    assert not ImportRun.objects.exists()


def test_real_run_then_rerun(fake_platform, export):
    program = ProgramFactory()
    out = run("fake", export, "--program", program.pk)
    assert "Import complete: fake" in out
    assert "  commissions: 10 created, 0 matched, 3 skipped, 0 refused" in out
    run_row = ImportRun.objects.get()
    assert run_row.file_names == ["partners.csv"]
    again = run("fake", export, "--program", program.pk)
    assert "  commissions: 0 created, 10 matched, 3 skipped, 0 refused" in again
    assert Partner.objects.filter(workspace=program.workspace).count() == 3


def test_unknown_platform_lists_the_known_ones(fake_platform, export):
    program = ProgramFactory()
    with pytest.raises(CommandError) as error:
        run("nope", export, "--program", program.pk)
    assert str(error.value).startswith("Unknown platform 'nope'. Known: ")
    assert "fake" in str(error.value) and "rewardful" in str(error.value)


def test_unknown_program_unreadable_file_and_wrong_file(fake_platform, export, tmp_path):
    program = ProgramFactory()
    with pytest.raises(CommandError, match="Program 999999 does not exist"):
        run("fake", export, "--program", 999999)
    with pytest.raises(CommandError, match=r"Cannot read .*missing.csv: No such file or directory"):
        run("fake", tmp_path / "missing.csv", "--program", program.pk)
    other = tmp_path / "other.csv"
    other.write_bytes(b"id,name\n")
    with pytest.raises(CommandError, match="other.csv: not a Fake export"):
        run("fake", other, "--program", program.pk)


def test_resume_needs_an_interrupted_import(fake_platform, export):
    program = ProgramFactory()
    with pytest.raises(CommandError, match="Nothing to resume"):
        run("fake", export, "--program", program.pk, "--resume")


def test_exit_status_is_non_zero_on_an_error(fake_platform, export):
    from django.core.management import ManagementUtility

    utility = ManagementUtility(["manage.py", "import", "nope", str(export), "--program", "1"])
    with pytest.raises(SystemExit) as exit_info:
        utility.execute()
    assert exit_info.value.code != 0


def test_resume_continues_an_interrupted_import(fake_platform, export, monkeypatch):
    from imports import engine

    program = ProgramFactory()

    def crash(kind, number):
        if number == 2:
            raise RuntimeError("killed")

    monkeypatch.setattr(engine, "batch_hook", crash)
    with pytest.raises(RuntimeError):
        run("fake", export, "--program", program.pk, "--batch-size", 2)
    assert ImportRun.objects.get().state == "interrupted"
    monkeypatch.setattr(engine, "batch_hook", lambda kind, number: None)
    out = run("fake", export, "--program", program.pk, "--batch-size", 2, "--resume")
    assert "Import complete: fake" in out
    assert "  partners: 3 created, 0 matched, 0 skipped, 1 refused" in out
    assert ImportRun.objects.get().state == "complete"
