from collections import Counter

import pytest

from imports.platforms import PLATFORMS
from imports.records import ImportFileError
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end
from tests.imports.platform_fuzz import check_junk

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


def test_non_cash_rewards_and_unknown_statuses_are_refused():
    content = (
        b'[{"id": 1, "status": "approved", "unit": "credits", "amount": 500, "currency": "USD", "sale_amount": 0,'
        b' "promoter_campaign": {"promoter": {"id": 9}}},'
        b' {"id": 2, "status": "weird", "amount": 500, "currency": "USD", "sale_amount": 0, "promoter_id": 9}]'
    )
    source = firstpromoter.read([("commissions.json", content)])
    assert refusals(source) == [
        ("commissions.json item 1", "commission", "a credits reward, not money: not imported"),
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
