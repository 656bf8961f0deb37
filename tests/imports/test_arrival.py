"""What an owner is told and given on arrival, whatever the platform: partners the old platform switched off arrive
deactivated with their links off (a click answers 410), the dry run sets the money owed per currency beside what the
old platform showed, and names the link parameters to turn on so the links already out there keep working."""

import dataclasses
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from commissions import services
from commissions.models import Commission, CommissionStatus
from commissions.selectors import ledger_balances
from imports.engine import import_source, link_param_steps
from imports.models import ImportedRecord, ImportRun
from imports.platforms import PLATFORMS
from imports.platforms.base import Platform
from imports.readiness import import_check
from programs.models import Partner, ReferralLink, Role
from programs.services import partner_reactivate
from tests.factories import MembershipFactory, PartnerFactory, ProgramFactory
from tests.helpers import run_together
from tests.imports.engine_sources import small_source
from tracking.models import SaleEvent

pytestmark = [pytest.mark.django_db]

TOLT = Path(__file__).resolve().parent / "fixtures" / "tolt"

EXPORT = b"fake export\n"


def source_with(*, deactivated: dict[str, str] | None = None, reported: dict[str, tuple[Any, ...]] | None = None):
    source = small_source(platform="fake")
    partners = [
        dataclasses.replace(
            row,
            deactivated=(deactivated or {}).get(row.source_id, ""),
            reported_owed=(reported or {}).get(row.source_id, ()),
        )
        for row in source.partners
    ]
    return dataclasses.replace(source, partners=partners)


@pytest.fixture(autouse=True)
def fake_platform(monkeypatch):
    current = {"source": source_with()}
    monkeypatch.setitem(
        PLATFORMS,
        "fake",
        Platform(
            name="fake",
            label="Fake",
            link_param="fk",
            extra_link_params=("fk_new",),
            stripe_metadata_keys=(),
            export_help="Fake: Settings > Export",
            reader=lambda files: current["source"],
        ),
    )
    return current


@pytest.fixture
def program():
    return ProgramFactory(name="Acme", hold_days=30)


def click(api_client, program, code: str):
    return api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/?via={code}", "program_id": program.pk},
        format="json",
    )


class TestDeactivatedPartners:
    def test_they_arrive_inactive_with_their_links_off_and_a_click_answers_410(self, program, api_client):
        source = source_with(deactivated={"p2": "disabled on Fake"})
        dry = import_source(program, source, dry_run=True)
        assert dry.deactivated == ["partner p2 (Partner2@Example.com): disabled on Fake"]
        assert "Arriving deactivated, their links off (1):" in dry.lines()
        assert not Partner.objects.exists(), "the dry run writes nothing"

        import_source(program, source, dry_run=False)
        partners = {p.name: p for p in Partner.objects.filter(workspace=program.workspace)}
        assert [name for name, p in sorted(partners.items()) if not p.is_active] == ["Partner 2"]
        assert "Arrived deactivated: disabled on Fake." in partners["Partner 2"].notes
        links = dict(ReferralLink.objects.filter(program=program).values_list("short_link", "is_active"))
        assert links == {"old1": True, "old2": False, "old3": True}
        assert click(api_client, program, "old1").status_code == 200
        assert click(api_client, program, "old2").status_code == 410

    def test_a_rerun_leaves_a_partner_the_owner_reactivated_since_as_the_owner_left_it(self, program):
        source = source_with(deactivated={"p2": "disabled on Fake"})
        import_source(program, source, dry_run=False)
        partner = Partner.objects.get(name="Partner 2")
        partner_reactivate(partner_id=partner.pk)
        again = import_source(program, source, dry_run=False)
        assert again.counts["partner"].matched == 3 and again.counts["partner"].created == 0
        partner.refresh_from_db()
        assert partner.is_active

    def test_a_partner_already_here_stays_active_and_only_the_imported_links_come_off(self, program):
        existing = PartnerFactory(workspace=program.workspace, email="partner2@example.com", name="Here already")
        source = source_with(deactivated={"p2": "banned on Fake"})
        report = import_source(program, source, dry_run=False)
        assert report.deactivated == [
            "partner p2 (Partner2@Example.com): banned on Fake (already a partner here: stays active; the imported "
            "links are off)"
        ]
        existing.refresh_from_db()
        assert existing.is_active
        assert ReferralLink.objects.get(short_link="old2").is_active is False


class TestMoneyBeforeConfirming:
    # small_source: per partner n, pending 1000+n and approved 2000+n USD owed (paid and void are not); partner 1
    # also 777 EUR approved.
    def test_what_arrives_owed_beside_what_the_old_platform_showed(self, program):
        reported = {
            "p1": (("USD", 3002), ("EUR", 777)),  # matches
            "p2": (("USD", 3000),),  # 4 cents short on the old platform's side
            # p3: the export says nothing
        }
        report = import_source(program, source_with(reported=reported), dry_run=True)
        by_currency = {check.currency: check for check in report.balances}
        assert sorted(by_currency) == ["EUR", "USD"]
        usd = by_currency["USD"]
        assert (usd.expected_minor, usd.compared_expected_minor, usd.reported_minor) == (9012, 3002 + 3004, 6002)
        assert usd.difference_minor == 4
        assert (usd.compared_partners, usd.mismatch_count) == (2, 1)
        assert usd.mismatches == ["partner p2 (Partner2@Example.com): 30.04 USD here, 30.00 USD on Fake"]
        eur = by_currency["EUR"]
        assert (eur.expected_minor, eur.reported_minor, eur.mismatch_count) == (777, 777, 0)
        lines = report.lines()
        assert (
            "  EUR: 7.77 EUR owed on arrival; for the 1 partner(s) Fake reports, 7.77 EUR here and 7.77 EUR on Fake: "
            "matches"
        ) in lines
        assert (
            "  USD: 90.12 USD owed on arrival; for the 2 partner(s) Fake reports, 60.06 USD here and 60.02 USD on "
            "Fake: difference 0.04 USD, 1 partner(s) differ"
        ) in lines
        assert "    partner p2 (Partner2@Example.com): 30.04 USD here, 30.00 USD on Fake" in lines

    def test_an_export_without_balances_says_there_is_nothing_to_compare(self, program):
        report = import_source(program, source_with(), dry_run=True)
        assert [(c.currency, c.expected_minor, c.reported_minor) for c in report.balances] == [
            ("EUR", 777, None),
            ("USD", 9012, None),
        ]
        assert "  USD: 90.12 USD owed on arrival (Fake's export shows no balance to compare)" in report.lines()

    def test_a_refused_commission_shows_as_a_difference(self, program):
        source = source_with(reported={"p1": (("USD", 3002), ("EUR", 777))})
        commissions = [
            dataclasses.replace(row, currency="XYZ") if row.source_id == "c1-2" else row for row in source.commissions
        ]
        report = import_source(program, dataclasses.replace(source, commissions=commissions), dry_run=True)
        usd = next(check for check in report.balances if check.currency == "USD")
        assert (usd.compared_expected_minor, usd.reported_minor, usd.difference_minor) == (1001, 3002, -2001)
        assert usd.mismatches == ["partner p1 (Partner1@Example.com): 10.01 USD here, 30.02 USD on Fake"]

    def test_the_real_run_and_its_rerun_tell_the_same_money(self, program):
        source = source_with(reported={"p1": (("USD", 3002), ("EUR", 777))})
        first = import_source(program, source, dry_run=False)
        again = import_source(program, source, dry_run=False)
        assert [c.as_dict() for c in first.balances] == [c.as_dict() for c in again.balances]
        assert again.counts["commission"].created == 0


class TestLinkSteps:
    def test_each_platform_parameter_the_program_does_not_accept_is_named_with_the_links_it_keeps(self, program):
        report = import_source(program, source_with(), dry_run=True)
        assert report.link_steps == [
            "Turn on ?fk= (Overview → Link parameters → Also accept) to keep the 3 imported Fake links working",
            "Turn on ?fk_new= (Overview → Link parameters → Also accept) to keep the 3 imported Fake links working",
        ]
        program.link_aliases = ["fk_new"]
        program.save(update_fields=["link_aliases"])
        assert link_param_steps(program, platform="fake", links=1) == [
            "Turn on ?fk= (Overview → Link parameters → Also accept) to keep the 1 imported Fake link working"
        ]
        assert link_param_steps(program, platform="fake", links=0) == []

    def test_links_that_name_their_own_parameter_are_counted_by_it(self, program):
        source = source_with()
        links = [
            dataclasses.replace(row, param=param)
            for row, param in zip(source.links, ("ref", "via", "partner_code"), strict=True)
        ]
        report = import_source(program, dataclasses.replace(source, links=links), dry_run=True)
        assert report.link_steps == [
            "Turn on ?partner_code= (Overview → Link parameters → Also accept) to keep the 1 imported Fake link "
            "working",
            "Turn on ?ref= (Overview → Link parameters → Also accept) to keep the 1 imported Fake link working",
        ], "via is always read; a link without a parameter of its own counts for the platform's main one"

    def test_tolt_links_name_theirs(self, program):
        files = [(path.name, path.read_bytes()) for path in sorted(TOLT.glob("*.json"))]
        source = PLATFORMS["tolt"].read(files)
        params = {row.param for row in source.links}
        assert "ref" in params
        report = import_source(program, source, dry_run=True)
        ref_links = sum(1 for row in source.links if row.param in ("ref", ""))
        assert report.link_steps[0].startswith("Turn on ?ref= ")
        assert f"keep the {ref_links} imported Tolt link" in report.link_steps[0]

    def test_every_registered_platform_names_its_parameters(self, program):
        steps = {name: link_param_steps(program, platform=name, links=2) for name in PLATFORMS if name != "fake"}
        assert steps["partnerstack"][0].startswith("Turn on ?gspk=") and steps["partnerstack"][1].startswith(
            "Turn on ?ps_partner_key="
        )
        assert steps["dub"] == [
            "Point the Dub short links at your landing page with ?via=<code> so they keep answering"
        ]
        assert steps["rewardful"] == [], "Rewardful's ?via= is the spec's own parameter"

    def test_readiness_names_them_after_the_import(self, program):
        import_source(program, source_with(), dry_run=False)
        check = import_check(program)
        assert check is not None
        assert (
            "Turn on ?fk= (Overview → Link parameters → Also accept) to keep the 3 imported Fake links working"
            in (check["next_step"])
        )


class TestShownToTheOwner:
    def test_the_dry_run_page_shows_the_money_the_deactivated_and_the_link_steps(self, program, fake_platform):
        fake_platform["source"] = source_with(
            deactivated={"p3": "disabled on Fake"}, reported={"p1": (("USD", 3000), ("EUR", 777))}
        )
        browser = Client()
        browser.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user)
        upload = SimpleUploadedFile("export.json", EXPORT)
        response = browser.post(f"/programs/{program.pk}/import", {"platform": "fake", "files": [upload]})
        assert response.status_code == 302
        page = browser.get(response["Location"]).content.decode()
        assert 'id="balances"' in page and 'data-currency="USD"' in page
        assert "90.12 USD" in page and "30.00 USD" in page and "1 of 1 differ" in page
        assert "partner p1 (Partner1@Example.com): 30.02 USD here, 30.00 USD on Fake" in page
        assert 'id="deactivated"' in page and "partner p3 (Partner3@Example.com): disabled on Fake" in page
        assert 'id="link-steps"' in page and "Turn on ?fk=" in page

    def test_the_command_prints_them(self, program, fake_platform, tmp_path):
        fake_platform["source"] = source_with(deactivated={"p3": "disabled on Fake"})
        export = tmp_path / "export.json"
        export.write_bytes(EXPORT)
        out = StringIO()
        call_command("import", "fake", str(export), program=program.pk, dry_run=True, stdout=out)
        text = out.getvalue()
        assert "Owed to partners, per currency:" in text and "  USD: 90.12 USD owed on arrival" in text
        assert "Arriving deactivated, their links off (1):" in text
        assert "To keep the imported links working:" in text


def with_statuses(source, changes: dict[str, dict[str, Any]]):
    commissions = [
        dataclasses.replace(row, **changes[row.source_id]) if row.source_id in changes else row
        for row in source.commissions
    ]
    return dataclasses.replace(source, commissions=commissions)


def commission_of(program, source_id: str) -> Commission:
    record = ImportedRecord.objects.get(program=program, kind="commission", source_id=source_id)
    return Commission.objects.get(pk=record.object_id)


def balances_of(program) -> dict[str, dict[str, int]]:
    partners = {p.pk: p.name for p in Partner.objects.filter(workspace=program.workspace)}
    return {partners[pk]: money for pk, money in ledger_balances(partner_ids=list(partners)).items()}


class TestChangedSinceImported:
    """The owner exports again after the old platform paid or voided commissions already imported: a paid one is
    marked paid here (never paid twice), a voided one voided; anything else is named and left."""

    def test_paid_and_voided_there_since_are_paid_and_voided_here(self, program):
        first = source_with()
        import_source(program, first, dry_run=False)
        assert balances_of(program)["Partner 1"] == {"USD": 2001, "EUR": 777}
        later = with_statuses(
            first,
            {
                "c1-1": {"status": "paid"},  # pending here: credited and paid
                "c1-2": {"status": "paid"},  # approved here
                "c2-2": {"status": "void"},  # approved and credited here: taken back
                "c3-1": {"status": "void"},  # pending here
                "c3-2": {"commission_amount_minor": 999},  # another change: named, left
            },
        )
        dry = import_source(program, later, dry_run=True)
        assert dry.changes == [
            "commissions.csv line 5: commission c1-1 is paid on Fake since it was imported: would mark it paid here",
            "commissions.csv line 6: commission c1-2 is paid on Fake since it was imported: would mark it paid here",
            "commissions.csv line 10: commission c2-2 is void on Fake since it was imported: would void it here",
            "commissions.csv line 13: commission c3-1 is void on Fake since it was imported: would void it here",
            "commissions.csv line 14: commission c3-2 is 9.99 USD on Fake, 20.03 USD here: left as it is",
        ]
        assert commission_of(program, "c1-1").status == CommissionStatus.PENDING, "the dry run writes nothing"

        report = import_source(program, later, dry_run=False)
        assert report.counts["commission"].created == 0
        assert [change.rsplit(": ", 1)[1] for change in report.changes] == [
            "marked paid here",
            "marked paid here",
            "voided here",
            "voided here",
            "left as it is",
        ]
        paid = commission_of(program, "c1-1")
        assert (paid.status, paid.credited) == (CommissionStatus.PAID, True)
        assert list(paid.ledger_entries.order_by("pk").values_list("kind", "amount_cents", "memo")) == [
            ("credit", 1001, f"Commission #{paid.pk} approved"),
            ("payout", -1001, "Paid on Fake before the move"),
        ]
        assert commission_of(program, "c2-2").status == CommissionStatus.REVERSED
        assert commission_of(program, "c3-1").status == CommissionStatus.REVERSED
        assert commission_of(program, "c3-2").amount_cents == 2003
        balances = balances_of(program)
        assert balances["Partner 1"] == {"USD": 0, "EUR": 777}
        assert balances["Partner 2"] == {"USD": 0}
        assert ImportRun.objects.order_by("-pk").first().changes == report.changes

        again = import_source(program, later, dry_run=False)
        assert again.changes == [
            "commissions.csv line 14: commission c3-2 is 9.99 USD on Fake, 20.03 USD here: left as it is"
        ]
        assert balances_of(program) == balances

    def test_one_held_for_review_here_or_covered_by_a_payout_here_is_left_to_the_owner(self, program, monkeypatch):
        first = source_with()
        first = with_statuses(first, {"c1-1": {"held_reason": "held for review on Fake"}})
        import_source(program, first, dry_run=False)
        monkeypatch.setattr(services, "paid_out_checks", [lambda commission: commission.amount_cents == 2002])
        report = import_source(
            program, with_statuses(first, {"c1-1": {"status": "paid"}, "c2-2": {"status": "paid"}}), dry_run=False
        )
        assert report.changes == [
            "commissions.csv line 5: commission c1-1 is paid on Fake since it was imported: left as it is (it is "
            "held for review here)",
            "commissions.csv line 10: commission c2-2 is paid on Fake since it was imported: left as it is (a payout "
            "here covers it already)",
        ]
        assert commission_of(program, "c2-2").status == CommissionStatus.APPROVED

    def test_voided_there_and_paid_here_is_named_and_left(self, program):
        first = source_with()
        import_source(program, first, dry_run=False)
        report = import_source(program, with_statuses(first, {"c1-3": {"status": "void"}}), dry_run=True)
        assert report.changes == [
            "commissions.csv line 7: commission c1-3 is void on Fake, and paid here: left as it is (refund the sale "
            "here if the money should come back)"
        ]


@pytest.mark.django_db(transaction=True)
def test_two_reruns_at_once_pay_a_commission_once(program):
    first = source_with()
    import_source(program, first, dry_run=False)
    commission = commission_of(program, "c1-2")

    def mark(_: int) -> str:
        try:
            services.commission_paid_elsewhere(commission_id=commission.pk, memo="Paid on Fake before the move")
        except services.CommissionActionRefused as refused:
            return str(refused)
        return "paid"

    assert sorted(run_together(4, mark)) == ["it is paid out here"] * 3 + ["paid"]
    assert commission.ledger_entries.filter(kind="payout").count() == 1


def test_a_rerun_gives_sales_imported_before_their_processor_payment_id(program):
    """An installation that imported before the processor's payment id was kept: its sales hold the platform's own
    sale id; the next rerun gives them the charge id, so a Stripe refund finds them. One changed since is left."""
    first = source_with()
    import_source(program, first, dry_run=False)
    sale_of = {c: commission_of(program, c).sale for c in ("c1-1", "c1-2", "c2-2")}
    assert sale_of["c1-1"].provider_payment_id == "s1-1"
    SaleEvent.objects.filter(pk=sale_of["c2-2"].pk).update(provider_payment_id="ch_set_by_hand")
    later = with_statuses(
        first,
        {
            "c1-1": {"processor_payment_id": "ch_1"},
            "c1-2": {"processor_payment_id": "ch_2"},
            "c2-2": {"processor_payment_id": "ch_3"},
        },
    )
    import_source(program, later, dry_run=True)
    assert SaleEvent.objects.get(pk=sale_of["c1-1"].pk).provider_payment_id == "s1-1", "the dry run writes nothing"
    import_source(program, later, dry_run=False)
    ids = dict(
        SaleEvent.objects.filter(pk__in=[s.pk for s in sale_of.values()]).values_list("pk", "provider_payment_id")
    )
    assert [ids[sale_of[c].pk] for c in ("c1-1", "c1-2", "c2-2")] == ["ch_1", "ch_2", "ch_set_by_hand"]
