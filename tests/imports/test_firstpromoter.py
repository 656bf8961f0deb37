from collections import Counter
from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission, CommissionReview, CommissionStatus
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.models import ImportRun, ImportUpload
from imports.platforms import PLATFORMS
from imports.platforms import firstpromoter as firstpromoter_reader
from imports.records import ImportFileError
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.imports.fixtures.build import HERE, build, files
from tests.imports.platform_e2e import check_end_to_end, imported_ids, row_counts
from tests.imports.platform_fuzz import check_junk
from tracking.models import ClickEvent

firstpromoter = PLATFORMS["firstpromoter"]


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def test_platform_entry():
    assert (firstpromoter.label, firstpromoter.link_param) == ("FirstPromoter", "fpr")
    assert firstpromoter.stripe_metadata_keys == ("fp_tid",)


def test_counts_and_every_bad_row():
    source = firstpromoter.read(files("firstpromoter"))
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        40,
        40,
        120,
        150,
    )
    assert refusals(source) == [
        ("commissions.json item 31", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)"),
        ("commissions.json item 71", "commission", "amount 1234.5 in minor units has decimals"),
        ("commissions.json item 111", "commission", "partner 4242 is not in the partners file"),
        ("promoters.json item 2", "link", "code 'ada0' is already the code of partner 1000 (promoters.json item 1)"),
        ("promoters.json item 21", "partner", "email is missing"),
        ("promoters.json item 21", "link", "partner 1999 was refused (promoters.json item 21)"),
        ("referrals.json item 61", "referral", "no customer: neither an email nor a uid"),
    ]


def test_fields_and_statuses():
    source = firstpromoter.read(files("firstpromoter"))
    ada = source.partners[0]
    assert (ada.source_id, ada.email, ada.name, ada.payout_email, ada.payout_rail) == (
        "1000",
        "ada.okafor0@example.com",
        "Ada Okafor",
        "pay.ada0@example.net",
        "paypal",
    )
    assert ada.created_at is not None and ada.created_at.isoformat() == "2025-01-06T09:00:00+00:00"
    assert [(link.code, link.partner_source_id) for link in source.links[:2]] == [("ada0", "1000"), ("ben1", "1001")]
    paying, lead = source.referrals[0], source.referrals[3]
    assert (paying.processor_customer_id, paying.customer_key, paying.status) == ("cus_T00000", "", "customer")
    assert (lead.processor_customer_id, lead.customer_key, lead.status) == ("", "user-3", "lead")
    # approved + is_paid -> paid; denied -> void.
    assert Counter(c.status for c in source.commissions) == {"approved": 75, "pending": 25, "paid": 25, "void": 25}
    paid = source.commissions[2]
    assert (paid.source_id, paid.status, paid.sale_source_id, paid.referral_source_id) == (
        "7002",
        "paid",
        "evt-2",
        "3002",
    )


def test_non_cash_rewards_are_skipped_and_unknown_statuses_refused():
    content = (
        b'[{"id": 1, "status": "approved", "unit": "credits", "amount": 500, "sale_amount": 0,'
        b' "promoter_campaign": {"promoter": {"id": 9}}},'
        b' {"id": 2, "status": "weird", "amount": 500, "currency": "USD", "sale_amount": 0, "promoter_id": 9},'
        b' {"id": 3, "status": "denied", "amount": 500, "currency": "GBP", "sale_amount": 0, "promoter_id": 9}]'
    )
    source = firstpromoter.read([("commissions.json", content)])
    # Not owed (a non-cash reward, a denied commission): skipped by status, whatever the currency says.
    assert [(c.source_id, c.status) for c in source.commissions] == [("1", "void"), ("3", "void")]
    assert refusals(source) == [
        ("commissions.json item 2", "commission", "status 'weird' is not pending, approved or denied"),
    ]


def test_csv_and_unknown_files_are_refused():
    with pytest.raises(ImportFileError, match="promoters.csv: FirstPromoter files are the API's JSON answers"):
        firstpromoter.read([("promoters.csv", b"email,name\n")])
    with pytest.raises(ImportFileError, match="x.json: not a file this import knows"):
        firstpromoter.read([("x.json", b'{"data": [{"colour": "red"}]}')])


@pytest.mark.django_db
def test_end_to_end_dry_run_run_and_rerun():
    check_end_to_end("firstpromoter", files("firstpromoter"))


def test_junk_rows_are_refused_never_raised():
    check_junk("firstpromoter")


def test_the_fixture_files_are_what_the_builder_writes():
    assert build()["firstpromoter"] == dict(files("firstpromoter", *build()["firstpromoter"]))


def test_a_commission_naming_its_referral_by_email_or_uid_finds_it_and_its_promoter():
    referrals = (
        b'[{"id": 31, "email": "Buyer@Shop.example", "uid": "u-31", "promoter_campaign": {"promoter": {"id": 7}}},'
        b' {"id": 32, "email": "other@shop.example", "uid": "u-32", "promoter_campaign": {"promoter": {"id": 8}}}]'
    )
    commissions = (
        b'[{"id": 1, "status": "approved", "amount": 500, "currency": "USD", "sale_amount": 2500,'
        b' "referral": {"email": "buyer@shop.example", "uid": null}},'
        b' {"id": 2, "status": "pending", "amount": 300, "currency": "USD", "sale_amount": 1500,'
        b' "referral": {"email": null, "uid": "u-32"}}]'
    )
    source = firstpromoter.read([("referrals.json", referrals), ("commissions.json", commissions)])
    assert source.refusals == []
    assert [(c.referral_source_id, c.partner_source_id) for c in source.commissions] == [("31", "7"), ("32", "8")]


# --- FirstPromoter's published shapes (fixtures/firstpromoter_api, fixtures/firstpromoter_v1: README there) --------

API = "firstpromoter_api"
V1 = "firstpromoter_v1"
# Approved and unpaid, in the account's currency (USD): 302 is paid, 303 and 308 pending, 305 denied, 306 credits.
OWED = {"101": 2000, "102": 2500, "103": 3333 + 1200}


def _balances(program, platform="firstpromoter"):
    partners = imported_ids(program, platform, "partner")
    balances = ledger_balances(partner_ids=partners.values())
    got = {pid: {c: a for c, a in by.items() if a} for pid, by in balances.items()}
    return {source_id: got.get(pid, {}) for source_id, pid in partners.items() if got.get(pid)}


def test_published_v2_shapes_read_with_no_row_refused_given_the_currency():
    source = firstpromoter.read(files(API), currency="usd")
    assert source.refusals == []
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (3, 4, 4, 9)
    # The currency given, never original_sale_currency (302 and 304 were EUR sales before conversion).
    assert {c.currency for c in source.commissions if c.status != "void"} == {"USD"}
    statuses = {c.source_id: (c.status, c.held_reason) for c in source.commissions}
    held = firstpromoter_reader.HELD_REASON
    assert statuses == {
        "301": ("approved", ""),
        "302": ("paid", ""),
        "303": ("pending", held),
        "304": ("approved", ""),
        "305": ("void", ""),
        "306": ("void", ""),  # a credits reward: not money
        "307": ("approved", ""),
        "308": ("pending", held),
        "309": ("approved", ""),  # a custom commission with no referral: the promoter campaign's promoter
    }
    # Payout emails: the details of the payout method each promoter selected (payout_methods.json).
    assert [(p.source_id, p.payout_email, p.payout_rail) for p in source.partners] == [
        ("101", "ada.pay@example.net", "paypal"),
        ("102", "ben.wise@example.net", "wise"),
        ("103", "", ""),
    ]
    # One link per promoter campaign with a ref_token; a coupon-only campaign has none.
    assert [(link.code, link.partner_source_id) for link in source.links] == [
        ("ada", "101"),
        ("ben", "102"),
        ("ben-pro", "102"),
        ("cleo", "103"),
    ]


def test_without_the_currency_each_cash_commission_is_refused_naming_the_option():
    source = firstpromoter.read(files(API))
    refused = [r for r in source.refusals if r.kind == "commission"]
    assert len(refused) == 7 and len(source.refusals) == 7
    assert all(r.reason == firstpromoter_reader.CURRENCY_MISSING and "--currency" in r.reason for r in refused)
    # Denied and non-cash rows are skipped whatever the currency: they are not owed.
    assert sorted(c.source_id for c in source.commissions) == ["305", "306"]


def test_a_currency_some_rows_carry_is_the_default_and_a_rows_own_currency_wins():
    content = (
        b'[{"id": 1, "status": "approved", "amount": 500, "currency": "EUR", "sale_amount": 2500, "promoter_id": 9},'
        b' {"id": 2, "status": "approved", "amount": 300, "sale_amount": 1500, "promoter_id": 9,'
        b' "original_sale_currency": "VND"}]'
    )
    source = firstpromoter.read([("commissions.json", content)])
    assert [(c.source_id, c.currency) for c in source.commissions] == [("1", "EUR"), ("2", "EUR")]
    source = firstpromoter.read([("commissions.json", content)], currency="USD")
    assert [(c.source_id, c.currency) for c in source.commissions] == [("1", "EUR"), ("2", "USD")]
    with pytest.raises(ImportFileError, match="unknown currency 'XYZ'"):
        firstpromoter.read([("commissions.json", content)], currency="XYZ")


@pytest.mark.django_db
def test_published_shapes_import_exact_balances_and_a_rerun_creates_nothing():
    source = firstpromoter.read(files(API), currency="USD")
    program = ProgramFactory.create(hold_days=30)
    dry = import_source(program, source, dry_run=True).counts_dict()
    assert dry["commission"] == {"created": 7, "matched": 0, "skipped": 2, "refused": 0}
    assert all(dry[kind]["refused"] == 0 for kind in dry)
    done = import_source(program, source, dry_run=False).counts_dict()
    assert done == dry
    assert _balances(program) == {key: {"USD": amount} for key, amount in OWED.items()}
    counts = row_counts()
    rerun = import_source(program, source, dry_run=False).counts_dict()
    assert row_counts() == counts
    assert all(rerun[kind]["created"] == 0 for kind in rerun)
    assert rerun["commission"]["matched"] == 7


@pytest.mark.django_db
def test_pending_commissions_arrive_held_for_review_and_no_approval_run_credits_them():
    program = ProgramFactory.create(hold_days=30)
    import_source(program, firstpromoter.read(files(API), currency="USD"), dry_run=False)
    held = Commission.objects.filter(program=program, held_at__isnull=False)
    assert sorted(held.values_list("amount_cents", flat=True)) == [700, 1000]
    assert set(held.values_list("hold_reason", flat=True)) == {firstpromoter_reader.HELD_REASON}
    reviews = CommissionReview.objects.filter(commission__in=held)
    assert sorted(reviews.values_list("action", "actor")) == [("held", "import:firstpromoter")] * 2
    assert commissions_approve_due(now=timezone.now() + timedelta(days=3650)) == 0
    assert all((c.status, c.credited) == (CommissionStatus.PENDING, False) for c in held.all())
    assert _balances(program) == {key: {"USD": amount} for key, amount in OWED.items()}


def _command(*args):
    out = StringIO()
    call_command("import", *map(str, args), stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_command_refuses_without_currency_and_imports_exactly_with_it():
    program = ProgramFactory.create(hold_days=30)
    paths = [HERE / API / name for name, _ in files(API)]
    out = _command("firstpromoter", *paths, "--program", program.pk, "--dry-run")
    assert "  commissions: 0 to create, 0 matched, 2 skipped, 7 refused" in out
    assert f"commissions-1.json item 1: {firstpromoter_reader.CURRENCY_MISSING}" in out
    out = _command("firstpromoter", *paths, "--program", program.pk, "--currency", "usd")
    assert "  commissions: 7 created, 0 matched, 2 skipped, 0 refused" in out
    assert _balances(program) == {key: {"USD": amount} for key, amount in OWED.items()}
    out = _command("firstpromoter", *paths, "--program", program.pk, "--currency", "USD")
    assert "  commissions: 0 created, 7 matched, 2 skipped, 0 refused" in out


@pytest.mark.django_db
def test_the_import_page_currency_field_reaches_the_run(django_capture_on_commit_callbacks):
    program = ProgramFactory.create(hold_days=30)
    browser = Client()
    browser.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user)
    page = f"/programs/{program.pk}/import"
    assert 'name="currency"' in browser.get(page).content.decode()
    uploads = [SimpleUploadedFile(name, content) for name, content in files(API)]
    response = browser.post(page, {"platform": "firstpromoter", "currency": "USD", "files": uploads})
    assert response.status_code == 302
    upload = ImportUpload.objects.get()
    assert upload.currency == "USD"
    assert upload.report["counts"]["commission"] == {"created": 7, "matched": 0, "skipped": 2, "refused": 0}
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(f"{page}/uploads/{upload.pk}/confirm")
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.COMPLETE and run.counts == upload.report["counts"]
    assert _balances(program) == {key: {"USD": amount} for key, amount in OWED.items()}
    # An unknown currency is refused before anything is read.
    again = browser.post(page, {"platform": "firstpromoter", "currency": "XYZ", "files": uploads})
    assert again.status_code == 400 and ImportUpload.objects.count() == 1


def test_v1_promoters_bring_their_links_from_promotions_ref_id():
    source = firstpromoter.read(files(V1))
    assert source.refusals == []
    assert [(p.source_id, p.email, p.name, p.payout_email) for p in source.partners] == [
        ("8815216", "mintly@mailinator.com", "", ""),
        ("8815217", "dana@example.com", "Dana Reyes", "dana.pay@example.net"),
        ("8815218", "eli@example.com", "Eli Park", ""),
    ]
    assert [(link.code, link.partner_source_id) for link in source.links] == [
        ("heubv", "8815216"),
        ("dana", "8815217"),
        ("dana-yearly", "8815217"),
        ("eli7", "8815218"),
    ]


def test_a_promoter_with_neither_campaigns_nor_promotions_says_its_links_are_missing():
    content = b'{"data": [{"id": 5, "email": "x@example.com", "profile": {"first_name": "X"}}]}'
    source = firstpromoter.read([("promoters.json", content)])
    assert len(source.partners) == 1
    assert refusals(source) == [
        (
            "promoters.json item 1",
            "link",
            "no links: the promoter has neither promoter_campaigns (v2) nor promotions (v1)",
        )
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(("folder", "code", "partner"), [(V1, "dana-yearly", "8815217"), (API, "ben-pro", "102")])
def test_a_click_on_an_imported_fpr_link_counts_for_the_partner(api_client, folder, code, partner):
    program = ProgramFactory.create(hold_days=30, link_aliases=["fpr"])
    import_source(program, firstpromoter.read(files(folder), currency="USD"), dry_run=False)
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/?fpr={code}", "program_id": program.pk},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["partner_code"] == code
    assert (
        ClickEvent.objects.get(program=program).partner_id == imported_ids(program, "firstpromoter", "partner")[partner]
    )


@pytest.mark.django_db
def test_v1_end_to_end_dry_run_run_and_rerun():
    check_end_to_end("firstpromoter", files(V1))
