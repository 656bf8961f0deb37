"""A crash in the middle of a batch leaves whole batches only; running the same source again completes the run."""

import pytest

from commissions.models import Commission, LedgerEntry
from commissions.selectors import ledger_balances
from imports import engine
from imports.engine import import_source
from imports.models import ImportedRecord, ImportRun
from programs.models import Partner
from tests.factories import ProgramFactory
from tests.imports.engine_sources import approved_unpaid, small_source
from tracking.models import Customer, LeadEvent, SaleEvent

pytestmark = pytest.mark.django_db


BATCH_SIZES = [4, 1, 4, 1, 4, 4, 2, 4, 4, 4, 4]


class Crash(Exception):
    pass


def crash_in_batch(monkeypatch, stop_at: int) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []

    def hook(kind: str, number: int) -> None:
        seen.append((kind, number))
        if number == stop_at:
            raise Crash(f"stopped in batch {number}")

    monkeypatch.setattr(engine, "batch_hook", hook)
    return seen


@pytest.mark.parametrize("stop_at", [2, 4, 6, 10])
def test_a_crashed_import_resumes_and_everything_is_there_once(monkeypatch, stop_at):
    program = ProgramFactory()
    source = small_source(partners=5)
    # Batches of 4 (BATCH_SIZES): partners 1-2, links 3-4, referrals 5-7, commissions 8-11.
    seen = crash_in_batch(monkeypatch, stop_at)
    with pytest.raises(Crash):
        import_source(program, source, dry_run=False, batch_size=4)
    assert seen[-1][1] == stop_at
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.FAILED and run.state == "interrupted"
    assert "stopped in batch" in run.error
    # Only whole batches: every object written has its record, and nothing of the crashed batch is left.
    assert ImportedRecord.objects.filter(run=run).count() == sum(BATCH_SIZES[: stop_at - 1])

    monkeypatch.setattr(engine, "batch_hook", lambda kind, number: None)
    report = import_source(program, source, dry_run=False, batch_size=4)
    run.refresh_from_db()
    assert ImportRun.objects.count() == 1, "the rerun resumed the interrupted run"
    assert run.status == ImportRun.Status.COMPLETE and run.state == "complete" and run.finished_at is not None
    assert report.run_id == run.pk
    counts = report.counts_dict()
    assert counts["partner"]["created"] == 5 and counts["partner"]["matched"] == 0
    assert counts["commission"]["created"] == 16 and counts["commission"]["skipped"] == 5

    assert Partner.objects.filter(workspace=program.workspace).count() == 5
    assert Customer.objects.filter(program=program).count() == 10
    assert LeadEvent.objects.filter(program=program).count() == 10
    assert SaleEvent.objects.filter(program=program).count() == 16
    assert Commission.objects.filter(program=program).count() == 16
    credited = Commission.objects.filter(program=program, credited=True).count()
    assert LedgerEntry.objects.filter(kind="credit", program=program).count() == credited
    records = ImportedRecord.objects.filter(program=program)
    assert records.count() == 5 + 5 + 10 + 16
    partner_ids = {r.source_id: r.object_id for r in records.filter(kind="partner")}
    balances = ledger_balances(partner_ids=partner_ids.values())
    got = {(pid, cur): amount for pid, by in balances.items() for cur, amount in by.items()}
    assert got == {(partner_ids[p], cur): amount for (p, cur), amount in approved_unpaid(source).items()}


def test_a_run_left_running_without_progress_is_shown_interrupted():
    from datetime import timedelta

    from django.utils import timezone

    program = ProgramFactory()
    run = ImportRun.objects.create(program=program, platform="fake", files_digest="x")
    assert run.state == "running"
    ImportRun.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    run.refresh_from_db()
    assert run.state == "interrupted"
