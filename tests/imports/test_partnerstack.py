import base64
from collections import Counter

import pytest

from imports.platforms import PLATFORMS
from imports.platforms.base import gspk
from imports.records import ImportFileError
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end
from tests.imports.platform_fuzz import check_junk

partnerstack = PLATFORMS["partnerstack"]


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def test_platform_entry():
    assert (partnerstack.label, partnerstack.link_param) == ("PartnerStack", "gspk")
    assert partnerstack.stripe_metadata_keys == ("partner_key", "customer_key")


def test_counts_and_every_bad_row():
    source = partnerstack.read(files("partnerstack"))
    # 41 partners: the twin whose partner key is partner 0's comes over, its ?gspk= code does not.
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        41,
        40,
        120,
        150,
    )
    assert refusals(source) == [
        ("customers.json item 61", "referral", "no customer: neither an email, a customer_key nor a provider_key"),
        ("partnerships.json item 21", "partner", "email is missing"),
        ("partnerships.json item 21", "link", "partner pship_noemail was refused (partnerships.json item 21)"),
        (
            "partnerships.json item 31",
            "link",
            "code 'ada0' is already the code of partner pship_0000 (partnerships.json item 1)",
        ),
        ("rewards.json item 31", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)"),
        ("rewards.json item 71", "commission", "amount 1234.5 in minor units has decimals"),
        ("rewards.json item 111", "commission", "partner pship_ghost is not in the partners file"),
    ]


def test_codes_are_the_partner_keys_gspk_carries_and_statuses_map():
    source = partnerstack.read(files("partnerstack"))
    link = source.links[0]
    assert (link.source_id, link.partner_source_id, link.code) == ("gspk:ada0", "pship_0000", "ada0")
    # What reaches the site is ?gspk=YWRhMA== : the same key, Base64-encoded.
    assert gspk(link.code) == "YWRhMA==" and base64.b64decode("YWRhMA==").decode() == link.code
    ada = source.partners[0]
    assert ada.created_at is not None and ada.created_at.isoformat() == "2025-01-06T09:00:00+00:00"  # epoch ms
    paying, lead = source.referrals[0], source.referrals[3]
    assert (paying.processor_customer_id, paying.customer_key, paying.status) == ("cus_T00000", "user-0", "customer")
    assert (lead.processor_customer_id, lead.status) == ("", "lead")
    # hold -> pending, scheduled -> approved, declined -> void.
    assert Counter(c.status for c in source.commissions) == {"approved": 75, "pending": 25, "paid": 25, "void": 25}
    # A reward listed without its transaction takes the sale from the transactions file.
    first = source.commissions[0]
    assert first.sale_source_id == "txn_0000" and first.sale_amount_minor > 0


def test_csv_is_refused():
    with pytest.raises(ImportFileError, match="partners.csv: PartnerStack files are the API's JSON answers"):
        partnerstack.read([("partners.csv", b"email\n")])


@pytest.mark.django_db
def test_end_to_end_dry_run_run_and_rerun():
    check_end_to_end("partnerstack", files("partnerstack"))


def test_junk_rows_are_refused_never_raised():
    check_junk("partnerstack")


def test_the_fixture_files_are_what_the_builder_writes():
    assert build()["partnerstack"] == dict(files("partnerstack", *build()["partnerstack"]))


def test_a_reward_naming_its_customer_by_external_key_or_email_finds_it():
    customers = (
        b'{"data": {"items": [{"key": "cust_a", "email": "a@shop.example", "customer_key": "user-a",'
        b' "partnership_key": "pship_1"}]}}'
    )
    rewards = (
        b'{"data": {"items": ['
        b'{"key": "r1", "amount": 500, "currency": "usd", "reward_status": "approved",'
        b' "partnership": {"key": "pship_1"}, "customer": {"external_key": "user-a", "email": null}},'
        b'{"key": "r2", "amount": 500, "currency": "usd", "reward_status": "paid",'
        b' "partnership": {"key": "pship_1"}, "customer": {"external_key": null, "email": "A@shop.example"}}]}}'
    )
    source = partnerstack.read([("customers.json", customers), ("rewards.json", rewards)])
    assert source.refusals == []
    assert [(c.referral_source_id, c.currency, c.status) for c in source.commissions] == [
        ("cust_a", "USD", "approved"),
        ("cust_a", "USD", "paid"),
    ]
