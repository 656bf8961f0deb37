"""Two imports of the same files at once (a double-clicked confirmation, the command beside the page), on
PostgreSQL with threads: whichever batches collide, the unique imported records stop the second writer, so each
partner, link, referral and commission exists once, and a rerun completes what the loser left."""

import threading

import pytest
from django.db import connection

from commissions.models import Commission, LedgerEntry
from commissions.selectors import ledger_balances
from imports import engine
from imports.engine import import_source
from imports.models import ImportedRecord, ImportRun
from programs.models import Partner, ReferralLink
from tests.factories import ProgramFactory
from tests.imports.engine_sources import approved_unpaid, small_source
from tracking.models import Customer, SaleEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PARTNERS = 6


@pytest.mark.parametrize("batch_size", [2, 1000])
def test_two_imports_of_the_same_files_at_once_create_everything_once(batch_size):
    program = ProgramFactory(hold_days=30)
    source = small_source(partners=PARTNERS)
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def run() -> None:
        try:
            start.wait()
            import_source(program, source, dry_run=False, batch_size=batch_size)
            outcomes.append("complete")
        except Exception as error:  # the loser of a collision: its batch rolled back whole
            outcomes.append(type(error).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(outcomes) == 2 and "complete" in outcomes, outcomes
    for run in ImportRun.objects.exclude(status=ImportRun.Status.COMPLETE):
        assert run.state == "interrupted" and run.error == engine.RAN_AT_ONCE

    # Whatever the loser left unfinished, running the same files again completes it and creates nothing twice.
    import_source(program, source, dry_run=False, batch_size=batch_size)
    assert not ImportRun.objects.exclude(status=ImportRun.Status.COMPLETE).exists()

    partners = Partner.objects.filter(workspace=program.workspace)
    assert partners.count() == PARTNERS
    assert ReferralLink.objects.filter(program=program).count() == PARTNERS
    assert Customer.objects.filter(program=program).count() == 2 * PARTNERS
    commissions = Commission.objects.filter(program=program)
    assert commissions.count() == len([row for row in source.commissions if row.status != "void"])
    assert SaleEvent.objects.filter(program=program).count() == commissions.count()
    # Every ledger entry belongs to one commission, at most a credit and a paid-before-the-move debit each.
    assert LedgerEntry.objects.filter(program=program).count() == sum(
        2 if c.status == "paid" else 1 for c in commissions if c.credited
    )
    records = ImportedRecord.objects.filter(program=program)
    assert records.count() == records.values("kind", "source_id").distinct().count()

    ids = {partner.email.split("@")[0].lower().replace("partner", "p"): partner.pk for partner in partners}
    got = {
        (pid, currency): amount
        for pid, by in ledger_balances(partner_ids=ids.values()).items()
        for currency, amount in by.items()
    }
    assert got == {(ids[p], currency): amount for (p, currency), amount in approved_unpaid(source).items()}
