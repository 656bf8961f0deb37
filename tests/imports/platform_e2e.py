"""The end-to-end check every platform's test runs on its fixture files: a dry run writes nothing, the real run
creates what the dry run said, a re-run creates nothing twice, each partner's imported balance equals what the
source says is approved and unpaid, and every link keeps its code."""

from commissions.models import Commission, LedgerEntry
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.models import ImportedRecord, ImportRun
from imports.platforms import PLATFORMS
from programs.models import Partner, PartnerProgram, Program, ReferralLink
from tests.factories import ProgramFactory
from tests.imports.engine_sources import approved_unpaid
from tracking.models import Customer, SaleEvent

TABLES = (Partner, PartnerProgram, ReferralLink, Customer, SaleEvent, Commission, LedgerEntry, ImportedRecord)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in TABLES}


def imported_ids(program: Program, platform: str, kind: str) -> dict[str, int]:
    records = ImportedRecord.objects.filter(program=program, platform=platform, kind=kind)
    return dict(records.values_list("source_id", "object_id"))


def check_end_to_end(platform: str, files: list[tuple[str, bytes]], *, currency: str = "") -> Program:
    """`currency`: the owner's answer for a platform whose files carry none (Platform.asks_currency)."""
    source = PLATFORMS[platform].read(files, currency=currency)
    program: Program = ProgramFactory.create(hold_days=30)
    void = sum(1 for row in source.commissions if row.status == "void")
    # A visit that never signed up is skipped, as a void commission is: nothing to attribute later.
    visitors = sum(1 for row in source.referrals if row.status == "visitor")

    before = row_counts()
    dry = import_source(program, source, dry_run=True)
    assert row_counts() == before, "a dry run writes nothing"
    assert not ImportRun.objects.filter(program=program).exists()
    planned = dry.counts_dict()
    assert planned["partner"]["created"] == len(source.partners)
    assert planned["link"]["created"] == len(source.links)
    assert planned["referral"]["created"] == len(source.referrals) - visitors
    assert planned["referral"]["skipped"] == visitors
    assert planned["commission"]["created"] == len(source.commissions) - void
    assert planned["commission"]["skipped"] == void
    # Every row the reader refused is in the report, named by file and line.
    reported = {(refusal.where, refusal.reason) for refusal in dry.refusals}
    assert {(refusal.where, refusal.reason) for refusal in source.refusals} <= reported

    report = import_source(program, source, dry_run=False)
    done = report.counts_dict()
    for kind in ("partner", "link", "referral", "commission"):
        assert done[kind]["created"] == planned[kind]["created"], kind
    assert ImportRun.objects.get(program=program).status == ImportRun.Status.COMPLETE

    # Links keep their codes, each its partner's, in this program.
    partners = imported_ids(program, platform, "partner")
    emails = {row.source_id: row.email for row in source.partners}
    for row in source.links:
        link = ReferralLink.objects.select_related("partner").get(short_link=row.code)
        assert link.program_id == program.pk and link.partner is not None
        assert link.partner.email.lower() == emails[row.partner_source_id]

    # Referred customers keep their Stripe customer ids, so renewals stay attributed.
    stripe_ids = {row.processor_customer_id for row in source.referrals if row.processor_customer_id}
    stored = set(
        Customer.objects.filter(program=program, processor_customer_id__in=stripe_ids).values_list(
            "processor_customer_id", flat=True
        )
    )
    assert stored == stripe_ids

    # Per partner and currency, the imported balance is the source's approved and unpaid sum.
    balances = ledger_balances(partner_ids=partners.values())
    got = {(pid, currency): amount for pid, by in balances.items() for currency, amount in by.items() if amount}
    expected = {(partners[p], currency): amount for (p, currency), amount in approved_unpaid(source).items()}
    assert got == expected
    assert Commission.objects.filter(program=program).count() == len(source.commissions) - void

    # A second run creates nothing twice.
    after = row_counts()
    rerun = import_source(program, source, dry_run=False).counts_dict()
    assert row_counts() == after
    for kind in ("partner", "link", "referral", "commission"):
        assert rerun[kind]["created"] == 0, kind
        assert rerun[kind]["matched"] == done[kind]["created"] + done[kind]["matched"], kind
    return program
