from collections import Counter

import pytest

from imports.platforms import PLATFORMS
from imports.records import ImportFileError
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end
from tests.imports.platform_fuzz import check_junk

dub = PLATFORMS["dub"]


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def test_platform_entry():
    assert (dub.label, dub.link_param) == ("Dub", "")
    assert dub.stripe_metadata_keys == ("dubCustomerId", "dubCustomerExternalId")


def test_counts_and_every_bad_row():
    source = dub.read(files("dub"))
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        40,
        40,
        120,
        150,
    )
    assert refusals(source) == [
        ("commissions.json item 31", "commission", "unknown currency 'gbp' (known: USD, EUR, VND)"),
        ("commissions.json item 71", "commission", "amount 1234.5 in minor units has decimals"),
        ("commissions.json item 111", "commission", "partner pn_ghost is not in the partners file"),
        (
            "customers.json item 61",
            "referral",
            "no customer: neither an email, an externalId nor a stripeCustomerId",
        ),
        ("links.json item 11", "link", "code 'ada0' is already the code of partner pn_0000 (links.json item 1)"),
        ("links.json item 31", "link", "partner pn_noemail was refused (partners.json item 21)"),
        ("partners.json item 21", "partner", "email is missing"),
    ]


def test_fields_and_statuses():
    source = dub.read(files("dub"))
    assert [(link.code, link.partner_source_id) for link in source.links[:2]] == [
        ("ada0", "pn_0000"),
        ("ben1", "pn_0001"),
    ]
    # A customer listed without its partner is its link's partner's.
    unlisted = source.referrals[0]
    assert (unlisted.partner_source_id, unlisted.link_code, unlisted.customer_key) == ("pn_0000", "ada0", "user-0")
    assert unlisted.processor_customer_id == "cus_T00000" and unlisted.status == "customer"
    # processed -> approved; refunded and fraud -> void; currency upper-cased; amount is the sale, earnings ours.
    assert Counter(c.status for c in source.commissions) == {"approved": 75, "pending": 25, "paid": 25, "void": 25}
    first = source.commissions[0]
    assert first.currency == "USD" and first.commission_amount_minor < first.sale_amount_minor
    assert first.sale_source_id == "in_0000"


def test_csv_is_refused():
    with pytest.raises(ImportFileError, match="partners.csv: Dub files are the API's JSON answers"):
        dub.read([("partners.csv", b"email\n")])


@pytest.mark.django_db
def test_end_to_end_dry_run_run_and_rerun():
    check_end_to_end("dub", files("dub"))


def test_junk_rows_are_refused_never_raised():
    check_junk("dub")


def test_the_fixture_files_are_what_the_builder_writes():
    assert build()["dub"] == dict(files("dub", *build()["dub"]))
