from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import IntegrityError

from commissions.models import Commission, CommissionStatus, LedgerEntry
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.models import ImportedRecord, ImportRun
from imports.records import CommissionRow, LinkRow, PartnerRow, ReferralRow
from programs.models import Partner, PartnerProgram, ReferralLink
from tests.factories import PartnerFactory, ProgramFactory, ReferralLinkFactory
from tests.imports.engine_sources import T0, approved_unpaid, small_source
from tracking.models import Customer, CustomerStatus, LeadEvent, SaleEvent

pytestmark = pytest.mark.django_db

TABLES = (Partner, PartnerProgram, ReferralLink, Customer, LeadEvent, SaleEvent, Commission, LedgerEntry)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (*TABLES, ImportRun, ImportedRecord)}


def test_dry_run_writes_nothing_and_reports_what_it_would_do():
    program = ProgramFactory()
    before = row_counts()
    report = import_source(program, small_source(), dry_run=True)
    assert row_counts() == before
    counts = report.counts_dict()
    assert counts["partner"] == {"created": 3, "matched": 0, "skipped": 0, "refused": 1}
    assert counts["link"] == {"created": 3, "matched": 0, "skipped": 0, "refused": 0}
    assert counts["referral"] == {"created": 6, "matched": 0, "skipped": 0, "refused": 0}
    assert counts["commission"] == {"created": 10, "matched": 0, "skipped": 3, "refused": 0}
    assert [(r.where, r.reason) for r in report.refusals] == [("partners.csv line 99", "email is missing")]
    assert "partners.csv line 99: email is missing" in report.lines()


def test_real_run_creates_everything_with_balances_equal_to_the_source():
    program = ProgramFactory(hold_days=30)
    source = small_source()
    report = import_source(program, source, dry_run=False)
    assert report.counts_dict()["commission"] == {"created": 10, "matched": 0, "skipped": 3, "refused": 0}
    # A dry run afterwards finds everything already here.
    again = import_source(program, source, dry_run=True).counts_dict()
    assert again["partner"]["matched"] == 3 and again["commission"]["matched"] == 10
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.COMPLETE and run.state == "complete"
    assert run.counts["commission"]["created"] == 10

    partners = {p.email: p for p in Partner.objects.filter(workspace=program.workspace)}
    assert set(partners) == {"Partner1@Example.com", "Partner2@Example.com", "Partner3@Example.com"}
    assert "pay1@example.com (PayPal)" in partners["Partner1@Example.com"].notes
    assert PartnerProgram.objects.filter(program=program).count() == 3
    link = ReferralLink.objects.get(short_link="old1")
    assert link.program_id == program.pk and link.partner == partners["Partner1@Example.com"]

    customers = Customer.objects.filter(program=program)
    assert customers.count() == 6
    paying = customers.get(processor_customer_id="cus_1_2")
    assert paying.customer_status == CustomerStatus.CONVERTED
    assert paying.first_sale_at is not None and paying.first_link == link
    assert paying.click_id.startswith(f"cust_{program.pk}_")
    lead = customers.get(email="buyer1-1@example.com")
    assert lead.customer_status == CustomerStatus.LEAD and lead.first_sale_at is None
    assert LeadEvent.objects.filter(program=program).count() == 6
    enrolment = PartnerProgram.objects.get(program=program, partner=partners["Partner1@Example.com"])
    assert enrolment.leads == 2

    sale = SaleEvent.objects.get(processor_event_id=f"import:fake:{program.pk}:sale:s1-2")
    assert sale.provider == "import:fake" and sale.amount_cents == 20000 and sale.customer == paying
    commissions = Commission.objects.filter(program=program)
    assert commissions.count() == 10
    by_status = {c.sale.provider_payment_id: c for c in commissions}
    assert by_status["s1-1"].status == CommissionStatus.PENDING and not by_status["s1-1"].credited
    assert by_status["s1-1"].hold_until == T0.replace(day=13) + timedelta(days=30)
    assert by_status["s1-2"].status == CommissionStatus.APPROVED and by_status["s1-2"].credited
    assert by_status["s1-3"].status == CommissionStatus.PAID
    memos = list(
        LedgerEntry.objects.filter(commission=by_status["s1-3"]).order_by("pk").values_list("memo", "amount_cents")
    )
    assert memos == [("Imported from fake: commission c1-3", 3001), ("Paid on fake before the move", -3001)]

    # Per partner and currency, the balance is what the source says is approved and unpaid.
    ids = {f"p{n}": partners[f"Partner{n}@Example.com"].pk for n in (1, 2, 3)}
    balances = ledger_balances(partner_ids=ids.values())
    expected = {(ids[p], currency): amount for (p, currency), amount in approved_unpaid(source).items()}
    got = {(pid, currency): amount for pid, by in balances.items() for currency, amount in by.items()}
    assert got == expected
    assert got[(ids["p1"], "EUR")] == 777


def test_rerun_creates_nothing_twice():
    program = ProgramFactory()
    source = small_source()
    import_source(program, source, dry_run=False)
    after_first = row_counts()
    report = import_source(program, source, dry_run=False)
    after_second = row_counts()
    assert {k: v for k, v in after_second.items() if k != "ImportRun"} == {
        k: v for k, v in after_first.items() if k != "ImportRun"
    }
    counts = report.counts_dict()
    assert counts["partner"]["created"] == 0 and counts["partner"]["matched"] == 3
    assert counts["commission"]["created"] == 0 and counts["commission"]["matched"] == 10
    assert counts["referral"]["matched"] == 6 and counts["link"]["matched"] == 3


def test_imported_record_is_unique_by_constraint():
    program = ProgramFactory()
    fields = {"program": program, "platform": "fake", "kind": "partner", "source_id": "p1", "object_id": 1}
    ImportedRecord.objects.create(**fields)
    with pytest.raises(IntegrityError):
        ImportedRecord.objects.create(**{**fields, "object_id": 2})


def test_matches_partners_by_email_and_refuses_codes_held_elsewhere():
    program = ProgramFactory()
    existing = PartnerFactory(workspace=program.workspace, email="partner1@example.com")
    ReferralLinkFactory(program=program, partner=existing, short_link="old1")  # same partner: matched
    someone = PartnerFactory(workspace=program.workspace, email="someone@example.org")
    ReferralLinkFactory(program=program, partner=someone, short_link="old2")  # another partner of this program
    ReferralLinkFactory(short_link="old3")  # another workspace
    source = small_source()
    source = replace(
        source,
        links=[*source.links, LinkRow(where="links.csv line 9", source_id="l9", partner_source_id="p2", code="old1")],
        commissions=[
            *source.commissions,
            CommissionRow(
                where="commissions.csv line 50",
                source_id="c-x",
                partner_source_id="nobody",
                sale_amount_minor=100,
                commission_amount_minor=10,
                currency="USD",
                status="approved",
            ),
        ],
        referrals=[
            *source.referrals,
            ReferralRow(where="referrals.csv line 40", source_id="r-v", partner_source_id="p1", status="visitor"),
        ],
    )
    report = import_source(program, source, dry_run=False)
    counts = report.counts_dict()
    assert counts["partner"] == {"created": 2, "matched": 1, "skipped": 0, "refused": 1}
    assert counts["link"] == {"created": 0, "matched": 1, "skipped": 0, "refused": 3}
    assert counts["referral"]["skipped"] == 1
    reasons = {r.where: r.reason for r in report.refusals}
    assert reasons["links.csv line 3"] == "code 'old2' is held by another partner of this program"
    assert reasons["links.csv line 4"] == "code 'old3' is already taken (used by another workspace)"
    assert reasons["links.csv line 9"] == "code 'old1' is held by another partner in this import"
    assert reasons["commissions.csv line 50"] == "commission for partner nobody, who is not imported"
    assert Partner.objects.filter(workspace=program.workspace, email__iexact="partner1@example.com").count() == 1
    record = ImportedRecord.objects.get(program=program, kind="partner", source_id="p1")
    assert record.object_id == existing.pk and not record.created


def test_a_partner_without_email_is_refused_and_a_link_code_is_checked():
    program = ProgramFactory()
    source = replace(
        small_source(partners=1),
        partners=[
            *small_source(partners=1).partners,
            PartnerRow(where="partners.csv line 7", source_id="p7", email="", name="No Mail"),
        ],
        links=[LinkRow(where="links.csv line 2", source_id="l1", partner_source_id="p1", code="has space")],
    )
    report = import_source(program, source, dry_run=True)
    reasons = {r.where: r.reason for r in report.refusals}
    assert reasons["partners.csv line 7"] == "partner has no email"
    assert reasons["links.csv line 2"].startswith("code 'has space' cannot be a link here")


def test_two_programs_importing_the_same_ids_do_not_collide():
    source = small_source(partners=1)
    first, second = ProgramFactory(), ProgramFactory()
    import_source(first, source, dry_run=False)
    other = replace(source, links=[])  # the codes are global: the second program keeps its own
    report = import_source(second, other, dry_run=False)
    assert report.counts_dict()["commission"]["created"] == 4
    assert Commission.objects.filter(program=second).count() == 4


def test_a_rerun_refuses_rows_whose_objects_were_deleted_since():
    program = ProgramFactory()
    source = small_source(partners=1)
    import_source(program, source, dry_run=False)
    ReferralLink.objects.filter(short_link="old1").delete()
    Customer.objects.filter(email="buyer1-1@example.com").delete()
    report = import_source(program, source, dry_run=False)
    reasons = {r.where: r.reason for r in report.refusals}
    assert reasons["links.csv line 2"] == "link l1 was imported before and has been deleted since"
    assert reasons["referrals.csv line 3"] == "referral r1-1 was imported before and has been deleted since"
    assert report.counts_dict()["commission"] == {"created": 0, "matched": 4, "skipped": 1, "refused": 0}


def test_a_commission_in_a_currency_the_service_does_not_record_is_refused():
    program = ProgramFactory()
    source = small_source(partners=1)
    odd = replace(source.commissions[1], source_id="c-jpy", sale_source_id="s-jpy", currency="JPY")
    report = import_source(program, replace(source, commissions=[*source.commissions, odd]), dry_run=True)
    assert ("commissions.csv line 6", "unknown currency 'JPY'") in [(r.where, r.reason) for r in report.refusals]


def test_imported_links_answer_clicks_for_their_partners(api_client):
    from tracking.models import ClickEvent

    program = ProgramFactory(link_aliases=["fpr"])
    import_source(program, small_source(partners=2), dry_run=False)
    link = ReferralLink.objects.get(short_link="old2")
    url = "/api/v1/track/click"
    by_via = api_client.post(url, {"affiliate_url": "https://shop.example.com/?via=old2"}, format="json")
    assert by_via.status_code == 200, by_via.json()
    by_alias = api_client.post(
        url, {"affiliate_url": "https://shop.example.com/?fpr=old2", "program_id": program.pk}, format="json"
    )
    assert by_alias.status_code == 200, by_alias.json()
    events = ClickEvent.objects.filter(program=program)
    assert [(e.link_id, e.partner_id) for e in events] == [(link.pk, link.partner_id)] * 2


@pytest.mark.usefixtures("stripe_webhook_secret")
def test_a_renewal_of_an_imported_customer_is_attributed_by_its_stripe_id(client, django_capture_on_commit_callbacks):
    from tests.stripe_payloads import ACCOUNT, event, invoice, post_event

    program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_type="recurring_percent")
    import_source(program, small_source(partners=1), dry_run=False)
    customer = Customer.objects.get(processor_customer_id="cus_1_2")
    renewal = invoice(customer="cus_1_2", email="someone-else@example.com", billing_reason="subscription_cycle")
    with django_capture_on_commit_callbacks(execute=True):
        response = post_event(client, event("invoice.payment_succeeded", renewal))
    assert response.status_code == 200, response.content
    sale = SaleEvent.objects.get(program=program, provider="stripe")
    assert sale.customer_id == customer.pk and sale.partner_id == customer.first_partner_id
    assert Commission.objects.filter(sale=sale).exists()


def test_imported_sales_and_leads_count_in_the_partners_stats_after_a_rollup_run():
    from tracking.rollups import rollups_update, rollups_verify

    program = ProgramFactory()
    source = small_source(partners=2)
    import_source(program, source, dry_run=False)
    rollups_update(settle=timedelta(0))
    assert rollups_verify() == []
    for n in (1, 2):
        partner = Partner.objects.get(workspace=program.workspace, email=f"Partner{n}@Example.com")
        enrolment = PartnerProgram.objects.get(program=program, partner=partner)
        rows = [row for row in source.commissions if row.partner_source_id == f"p{n}" and row.status != "void"]
        assert enrolment.leads == 2
        assert enrolment.sales == len(rows)
        assert enrolment.revenue_cents == sum(row.sale_amount_minor for row in rows)
