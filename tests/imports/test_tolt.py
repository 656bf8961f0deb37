from collections import Counter

import pytest

from imports.platforms import PLATFORMS
from imports.records import ImportFileError
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end
from tests.imports.platform_fuzz import check_junk

tolt = PLATFORMS["tolt"]


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def test_platform_entry():
    assert (tolt.label, tolt.link_param, tolt.stripe_metadata_keys) == ("Tolt", "ref", ("tolt_referral",))


def test_counts_and_every_bad_row():
    source = tolt.read(files("tolt"))
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        40,
        40,
        120,
        150,
    )
    assert refusals(source) == [
        ("commissions.json item 31", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)"),
        ("commissions.json item 71", "commission", "amount 1234.5 in minor units has decimals"),
        ("commissions.json item 111", "commission", "partner part_ghost is not in the partners file"),
        ("customers.json item 61", "referral", "no customer: neither an email nor a customer_id"),
        ("links.json item 11", "link", "code 'ada0' is already the code of partner part_0000 (links.json item 1)"),
        ("links.json item 31", "link", "partner part_noemail was refused (partners.json item 21)"),
        ("partners.json item 21", "partner", "email is missing"),
    ]


def test_fields_statuses_and_the_program_currency():
    source = tolt.read(files("tolt"))
    assert [(link.code, link.partner_source_id) for link in source.links[:2]] == [
        ("ada0", "part_0000"),
        ("ben1", "part_0001"),
    ]
    paying, lead = source.referrals[0], source.referrals[3]
    assert (paying.processor_customer_id, paying.customer_key, paying.status) == ("cus_T00000", "", "customer")
    assert (lead.processor_customer_id, lead.customer_key, lead.status) == ("", "user-3", "lead")
    # rejected -> void; money strings are cents.
    assert Counter(c.status for c in source.commissions) == {"approved": 75, "pending": 25, "paid": 25, "void": 25}
    first = source.commissions[0]
    assert first.currency == "USD"  # no currency of its own: the program's currency_code
    assert (first.sale_source_id, first.referral_source_id, first.partner_source_id) == (
        "txn_0000",
        "cust_0000",
        "part_0000",
    )


def test_a_commission_without_its_partner_takes_the_customers_partner():
    customers = b'[{"id": "cust_1", "customer_id": "cus_9", "email": "a@b.co", "partner_id": "part_7"}]'
    commissions = (
        b'[{"id": "comm_1", "amount": "500", "revenue": "2500", "customer_id": "cust_1", "status": "approved",'
        b' "program": {"currency_code": "EUR"}}]'
    )
    source = tolt.read([("customers.json", customers), ("commissions.json", commissions)])
    assert source.refusals == []
    row = source.commissions[0]
    assert (row.partner_source_id, row.currency, row.commission_amount_minor, row.sale_amount_minor) == (
        "part_7",
        "EUR",
        500,
        2500,
    )


def test_csv_is_refused():
    with pytest.raises(ImportFileError, match="partners.csv: Tolt files are the API's JSON answers"):
        tolt.read([("partners.csv", b"email\n")])


@pytest.mark.django_db
def test_end_to_end_dry_run_run_and_rerun():
    check_end_to_end("tolt", files("tolt"))


def test_junk_rows_are_refused_never_raised():
    check_junk("tolt")


def test_the_fixture_files_are_what_the_builder_writes():
    assert build()["tolt"] == dict(files("tolt", *build()["tolt"]))
