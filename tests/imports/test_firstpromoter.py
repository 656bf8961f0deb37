import json
import random
from collections import Counter
from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission, CommissionReview, CommissionStatus
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.models import ImportedRecord, ImportRun, ImportUpload
from imports.platforms import PLATFORMS
from imports.platforms import firstpromoter as firstpromoter_reader
from imports.records import ImportFileError
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.imports.fixtures.build import HERE, build, files
from tests.imports.platform_e2e import check_end_to_end, imported_ids, row_counts
from tests.imports.platform_fuzz import WHERE, check_junk, mutate
from tests.imports.test_refunds_after_move import stripe_charge
from tests.stripe_payloads import ACCOUNT, event, post_event
from tracking.models import ClickEvent

firstpromoter = PLATFORMS["firstpromoter"]


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def test_platform_entry():
    assert (firstpromoter.label, firstpromoter.link_param) == ("FirstPromoter", "fpr")
    assert firstpromoter.stripe_metadata_keys == ("fp_tid",)


def test_counts_and_every_bad_row():
    source = firstpromoter.read(files("firstpromoter"), currency="USD")
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        40,
        40,
        120,
        151,
    )
    # Item 31, a sale in GBP before FirstPromoter converted it, imports in the account's currency: no refusal.
    assert source.commissions[30].source_id == "7990" and source.commissions[30].currency == "USD"
    assert refusals(source) == [
        ("commissions.json item 71", "commission", "amount 1234.5 in minor units has decimals"),
        ("commissions.json item 111", "commission", "partner 4242 is not in the partners file"),
        ("promoters.json item 2", "link", "code 'ada0' is already the code of partner 1000 (promoters.json item 1)"),
        ("promoters.json item 21", "partner", "email is missing"),
        ("promoters.json item 21", "link", "partner 1999 was refused (promoters.json item 21)"),
        ("referrals.json item 61", "referral", "no customer: neither an email nor a uid"),
    ]


def test_the_generated_fixtures_carry_no_currency_as_firstpromoter_v2_sends_none():
    for name, content in files("firstpromoter"):
        assert b'"currency"' not in content, name
    assert {c.currency for c in firstpromoter.read(files("firstpromoter"), currency="EUR").commissions} == {"", "EUR"}


def test_fields_and_statuses():
    source = firstpromoter.read(files("firstpromoter"), currency="USD")
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
    assert Counter(c.status for c in source.commissions) == {"approved": 76, "pending": 25, "paid": 25, "void": 25}
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
    check_end_to_end("firstpromoter", files("firstpromoter"), currency="USD")


def test_junk_rows_are_refused_never_raised():
    check_junk("firstpromoter", currency="USD")


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
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (4, 5, 5, 9)
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
        ("104", "", ""),
    ]
    # One link per promoter campaign with a ref_token; a coupon-only campaign has none.
    assert [(link.code, link.partner_source_id) for link in source.links] == [
        ("ada", "101"),
        ("ben", "102"),
        ("ben-pro", "102"),
        ("cleo", "103"),
        ("dev", "104"),
    ]
    # Dev's only campaign is blocked (POST /promoters/block): switched off; the others are accepted.
    assert [(p.source_id, p.deactivated) for p in source.partners] == [
        ("101", ""),
        ("102", ""),
        ("103", ""),
        ("104", "blocked on FirstPromoter"),
    ]
    # The v2 promoter shows no owed-and-unpaid figure (`balances` is its earnings): nothing to compare.
    assert all(p.reported_owed == () for p in source.partners)
    # A referral FirstPromoter denied is skipped (a visitor to the engine); a signup is a lead.
    assert [(r.source_id, r.status) for r in source.referrals] == [
        ("201", "customer"),
        ("202", "lead"),
        ("203", "customer"),
        ("204", "customer"),
        ("205", "visitor"),
    ]


def test_without_the_currency_the_commissions_file_is_refused_naming_the_option():
    # One clear answer, not each of hundreds of rows refused alike.
    with pytest.raises(ImportFileError) as refused:
        firstpromoter.read(files(API))
    assert refused.value.message == f"commissions-1.json: {firstpromoter_reader.CURRENCY_MISSING}"
    assert "--currency" in refused.value.message
    # Files with nothing owed in cash (denied, non-cash) need no currency: skipped by status.
    content = (
        b'[{"id": 1, "status": "denied", "unit": "cash", "amount": 900, "sale_amount": 4500, "promoter_id": 9},'
        b' {"id": 2, "status": "approved", "unit": "points", "amount": 5, "sale_amount": 0, "promoter_id": 9}]'
    )
    source = firstpromoter.read([("commissions.json", content)])
    assert [(c.source_id, c.status) for c in source.commissions] == [("1", "void"), ("2", "void")]
    # Promoters, referrals and payout methods alone carry no money: read without a currency.
    names = ("promoters.json", "referrals.json", "payout_methods.json")
    assert firstpromoter.read(files(API, *names)).refusals == []


def test_status_decides_before_amount_or_currency():
    content = (
        b'[{"id": 1, "status": "denied", "unit": "cash", "amount": "abc", "currency": "GBP", "sale_amount": "x",'
        b' "promoter_id": 9},'
        b' {"id": 2, "status": "approved", "unit": "credits", "amount": 12.5, "sale_amount": null, "promoter_id": 9},'
        b' {"id": 3, "status": "approved", "unit": "cash", "amount": "abc", "sale_amount": 0, "promoter_id": 9},'
        b' {"id": 4, "status": "paid", "unit": "cash", "amount": 100, "sale_amount": 0, "promoter_id": 9}]'
    )
    source = firstpromoter.read([("commissions.json", content)], currency="USD")
    assert [(c.source_id, c.status) for c in source.commissions] == [("1", "void"), ("2", "void")]
    assert refusals(source) == [
        ("commissions.json item 3", "commission", "amount 'abc' is not a number"),
        ("commissions.json item 4", "commission", "status 'paid' is not pending, approved or denied"),
    ]


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
    with pytest.raises(CommandError) as refused:
        _command("firstpromoter", *paths, "--program", program.pk, "--dry-run")
    assert str(refused.value) == f"commissions-1.json: {firstpromoter_reader.CURRENCY_MISSING}"
    assert row_counts() == dict.fromkeys(row_counts(), 0)
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
    # An unknown currency is refused before anything is read; no currency at all is refused by the reader, named.
    again = browser.post(page, {"platform": "firstpromoter", "currency": "XYZ", "files": uploads})
    assert again.status_code == 400 and ImportUpload.objects.count() == 1
    uploads = [SimpleUploadedFile(name, content) for name, content in files(API)]
    none = browser.post(page, {"platform": "firstpromoter", "currency": "", "files": uploads})
    assert none.status_code == 400 and ImportUpload.objects.count() == 1
    assert firstpromoter_reader.CURRENCY_MISSING in none.content.decode().replace("&#x27;", "'")


def test_v1_promoters_bring_their_links_from_promotions_ref_id():
    source = firstpromoter.read(files(V1, "promoters.json"))
    assert source.refusals == []
    assert [(p.source_id, p.email, p.name, p.payout_email) for p in source.partners] == [
        ("8815216", "mintly@mailinator.com", "", ""),
        ("8815217", "dana@example.com", "Dana Reyes", "dana.pay@example.net"),
        ("8815218", "eli@example.com", "Eli Park", ""),
        ("8815219", "finn@example.com", "Finn Cole", ""),
    ]
    assert [(link.code, link.partner_source_id) for link in source.links] == [
        ("heubv", "8815216"),
        ("dana", "8815217"),
        ("dana-yearly", "8815217"),
        ("eli7", "8815218"),
        ("finn", "8815219"),
    ]
    # status denied (the v1 Promoter schema's word): switched off.
    assert [p.deactivated for p in source.partners] == ["", "", "", "denied on FirstPromoter"]
    # current_balance.cash needs the account's currency to be named; without one there is nothing to compare.
    assert all(p.reported_owed == () for p in source.partners)


def test_v1_current_balance_is_what_each_promoter_is_shown_owed():
    source = firstpromoter.read(files(V1, "promoters.json"), currency="usd")
    # current_balance.cash, "Current unpaid balance"; null balances (the published example) show nothing.
    assert [(p.source_id, p.reported_owed) for p in source.partners] == [
        ("8815216", ()),
        ("8815217", (("USD", 1500),)),
        ("8815218", (("USD", 2500),)),
        ("8815219", ()),
    ]
    junk = b'[{"id": 1, "email": "a@example.com", "promotions": [], "current_balance": {"cash": "15.00"}}]'
    assert refusals(firstpromoter.read([("promoters.json", junk)], currency="USD")) == [
        ("promoters.json item 1", "partner", "current_balance.cash '15.00' is not an amount in cents"),
    ]


def test_v1_leads_and_rewards_read_with_paid_rewards_told_by_paid_balance():
    source = firstpromoter.read(files(V1), currency="USD")
    assert source.refusals == []
    assert [
        (r.source_id, r.partner_source_id, r.status, r.processor_customer_id, r.link_code) for r in source.referrals
    ] == [
        ("5001", "8815217", "customer", "cus_V1001", "dana"),
        ("5002", "8815217", "lead", "", "dana-yearly"),
        ("5003", "8815218", "customer", "cus_V1003", "eli7"),
        ("5004", "8815218", "visitor", "", "eli7"),  # denied by FirstPromoter: skipped
    ]
    rows = {c.source_id: c for c in source.commissions}
    assert {key: (c.status, c.held_reason) for key, c in rows.items()} == {
        "4001": ("paid", ""),  # Dana's oldest approved reward: her paid_balance.cash, 20.00
        "4002": ("approved", ""),  # her current_balance.cash, 15.00
        "4003": ("pending", firstpromoter_reader.HELD_REASON),
        "4004": ("void", ""),  # denied
        "4005": ("void", ""),  # credits
        "4006": ("approved", ""),  # Eli was never paid (paid_balance null)
    }
    first_reward = rows["4001"]
    assert (first_reward.referral_source_id, first_reward.sale_source_id, first_reward.sale_amount_minor) == (
        "5001",
        "in_V1Dana01",
        10000,
    )
    assert {c.currency for c in source.commissions if c.status != "void"} == {"USD"}
    with pytest.raises(ImportFileError, match=r"rewards.json: FirstPromoter's commissions carry no currency"):
        firstpromoter.read(files(V1))


def test_v1_rewards_whose_payment_cannot_be_told_are_refused_naming_paid_balance():
    # Without the promoters list: nothing says which approved rewards were paid.
    source = firstpromoter.read(files(V1, "rewards.json"), currency="USD")
    assert {r.reason for r in source.refusals} == {firstpromoter_reader.V1_PAID_UNKNOWN}
    assert sorted(r.where for r in source.refusals) == [f"rewards.json item {n}" for n in (1, 2, 6)]
    # A paid balance no oldest rewards add up to (20.00 + 15.00 never makes 25.00): refused, not guessed.
    promoters = files(V1, "promoters.json")[0][1].replace(
        b'"paid_balance": {"cash": 2000}', b'"paid_balance": {"cash": 2500}'
    )
    source = firstpromoter.read(
        [("promoters.json", promoters), *files(V1, "leads.json", "rewards.json")], currency="USD"
    )
    assert [(r.where, r.reason) for r in source.refusals] == [
        ("rewards.json item 1", firstpromoter_reader.V1_PAID_UNKNOWN),
        ("rewards.json item 2", firstpromoter_reader.V1_PAID_UNKNOWN),
    ]


@pytest.mark.parametrize(
    ("promoter", "deactivated"),
    [
        (
            {"archived_at": "2025-03-01T10:00:00.000Z", "promoter_campaigns": [{"state": "accepted"}]},
            "archived on FirstPromoter",
        ),
        ({"promoter_campaigns": [{"state": "rejected"}]}, "rejected on FirstPromoter"),
        ({"promoter_campaigns": [{"state": "rejected"}, {"state": "blocked"}]}, "blocked on FirstPromoter"),
        ({"promoter_campaigns": [{"state": "inactive"}]}, "inactive on FirstPromoter"),
        # Blocked from one campaign, still accepted in another: still earning there.
        ({"promoter_campaigns": [{"state": "blocked"}, {"state": "accepted"}]}, ""),
        # An applicant not yet accepted was never switched off.
        ({"promoter_campaigns": [{"state": "pending"}]}, ""),
        ({"status": "blocked", "promotions": []}, "blocked on FirstPromoter"),  # v1, the webhooks' word
        ({"status": "active", "promotions": []}, ""),
    ],
)
def test_promoters_firstpromoter_switched_off_arrive_deactivated(promoter, deactivated):
    item = {"id": 7, "email": "p@example.com", "profile": {}, **promoter}
    source = firstpromoter.read([("promoters.json", json.dumps({"data": [item]}).encode())])
    assert [p.deactivated for p in source.partners] == [deactivated]


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


# Every parameter FirstPromoter documents for a referral link ("The available query parameters are ?fpr, ?via,
# ?fp_ref, ?deal, ?ref, ?_from, ?_by, ?_go", guides/tracking-without-fprjs.mdx), with the alias docs/import.md tells
# the owner to turn on; via is the service's own.
LINK_FORMATS = [
    ("fpr=ben-pro", ["fpr"]),
    ("via=ben-pro", []),
    ("fp_ref=ben-pro", ["fp_ref"]),
    ("deal=ben-pro", ["deal"]),
    ("ref=ben-pro", ["ref"]),
    ("_from=ben-pro", ["_from"]),
    ("_by=ben-pro", ["_by"]),
    ("_go=ben-pro", ["_go"]),
    # A sub-id link is the same link with the promoter's sub-id beside the code.
    ("fpr=ben-pro&sub_id=blog", ["fpr"]),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("query", "aliases"), LINK_FORMATS)
def test_a_click_on_every_documented_link_format_counts_for_the_imported_promoter(api_client, query, aliases):
    program = ProgramFactory.create(hold_days=30, link_aliases=aliases)
    import_source(program, firstpromoter.read(files(API), currency="USD"), dry_run=False)
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/pricing?{query}", "program_id": program.pk},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["partner_code"] == "ben-pro"
    event = ClickEvent.objects.get(program=program)
    assert event.partner_id == imported_ids(program, "firstpromoter", "partner")["102"]


@pytest.mark.django_db
def test_v1_end_to_end_dry_run_run_and_rerun():
    program = check_end_to_end("firstpromoter", files(V1), currency="USD")
    assert _balances(program) == {"8815217": {"USD": 1500}, "8815218": {"USD": 2500}}


@pytest.mark.django_db
@pytest.mark.usefixtures("stripe_webhook_secret")
def test_a_stripe_refund_of_the_invoice_behind_event_id_reverses_the_imported_commission(
    client, django_capture_on_commit_callbacks
):
    # event_id is the billing provider's id of the sale: for a Stripe subscription, the invoice (v1 rewards API).
    program = ProgramFactory.create(stripe_account_id=ACCOUNT, hold_days=0)
    source = firstpromoter.read(files(API), currency="USD")
    assert {c.source_id: c.processor_payment_id for c in source.commissions if c.status != "void"}["301"] == (
        "in_1Ada0001"
    )
    assert {c.source_id: c.processor_payment_id for c in source.commissions}["309"] == ""  # a custom commission
    import_source(program, source, dry_run=False)
    record = ImportedRecord.objects.get(program=program, platform="firstpromoter", kind="commission", source_id="301")
    commission = Commission.objects.select_related("sale").get(pk=record.object_id)
    assert commission.sale.provider_payment_id == "in_1Ada0001"
    charge = stripe_charge(
        charge_id="ch_3FpAda0001",
        amount=10000,
        refunds=[("re_3FpAda0001", 10000)],
        payment_intent="pi_3FpAda0001",
        invoice="in_1Ada0001",
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = post_event(client, event("charge.refunded", charge))
    assert response.status_code == 200, response.content
    commission.refresh_from_db()
    assert commission.status == "reversed"
    # Ada's 20.00 is gone; the others' balances are untouched.
    assert _balances(program) == {key: {"USD": amount} for key, amount in OWED.items() if key != "101"}


@pytest.mark.parametrize("folder", [API, V1])
def test_junk_in_the_published_shapes_is_refused_never_raised(folder):
    rng = random.Random(f"{folder}-junk")
    originals = [(name, json.loads(content)) for name, content in files(folder)]
    for _ in range(60):
        uploaded = []
        for name, payload in originals:
            rows = payload["data"] if isinstance(payload, dict) else payload
            uploaded.append((name, json.dumps([mutate(r, rng) if rng.random() < 0.4 else r for r in rows]).encode()))
        for currency in ("USD", ""):
            try:
                source = firstpromoter.read(uploaded, currency=currency)
            except ImportFileError:
                continue
            for rows in (source.partners, source.links, source.referrals, source.commissions, source.refusals):
                assert all(WHERE.match(row.where) for row in rows)
            assert all(row.commission_amount_minor >= 0 and row.sale_amount_minor >= 0 for row in source.commissions)


@pytest.mark.django_db
def test_v1_dry_run_sets_the_payable_balance_beside_the_approved_rewards_only():
    # current_balance.cash is the payable balance (approved rewards): a reward still pending is not in it, so the
    # dry run compares it with what arrives approved, and the pending one does not show as a difference.
    program = ProgramFactory.create(hold_days=30)
    source = firstpromoter.read(files(V1), currency="USD")
    assert any(row.reported_owed for row in source.partners)
    report = import_source(program, source, dry_run=True)
    usd = next(check for check in report.balances if check.currency == "USD")
    assert usd.reported_minor is not None and usd.compared_partners > 0
    assert (usd.mismatch_count, usd.difference_minor) == (0, 0), usd.mismatches
