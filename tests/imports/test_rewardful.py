from collections import Counter
from datetime import UTC, datetime

import pytest

from imports.platforms import PLATFORMS
from imports.records import CommissionRow, ImportFileError
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end
from tests.imports.platform_fuzz import check_junk

rewardful = PLATFORMS["rewardful"]
JSON_FILES = ("affiliates.json", "referrals.json", "commissions.json")


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def test_platform_entry():
    assert (rewardful.label, rewardful.link_param, rewardful.stripe_metadata_keys) == (
        "Rewardful",
        "via",
        ("referral",),
    )
    assert "/v1/commissions" in rewardful.export_help


def test_api_files_counts_and_every_bad_row():
    source = rewardful.read(files("rewardful", *JSON_FILES))
    assert source.platform == "rewardful"
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        40,
        40,
        120,
        150,
    )
    assert refusals(source) == [
        (
            "affiliates.json item 2",
            "link",
            "code 'ada0' is already the code of partner aff-0000 (affiliates.json item 1)",
        ),
        ("affiliates.json item 21", "partner", "email is missing"),
        ("affiliates.json item 21", "link", "partner aff-noemail was refused (affiliates.json item 21)"),
        ("commissions.json item 31", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)"),
        ("commissions.json item 71", "commission", "amount 1234.5 in minor units has decimals"),
        ("commissions.json item 111", "commission", "partner aff-ghost is not in the partners file"),
        ("referrals.json item 61", "referral", "no customer: neither an email nor a Stripe customer id"),
    ]


def test_fields_and_states():
    source = rewardful.read(files("rewardful", *JSON_FILES))
    ada = source.partners[0]
    assert (ada.source_id, ada.email, ada.name) == ("aff-0000", "ada.okafor0@example.com", "Ada Okafor")
    assert (ada.payout_email, ada.payout_rail) == ("pay.ada0@example.net", "paypal")
    assert source.partners[1].payout_rail == ""
    assert [link.code for link in source.links[:3]] == ["ada0", "ben1", "cleo2"]
    referral = source.referrals[0]
    assert (referral.partner_source_id, referral.processor_customer_id, referral.status) == (
        "aff-0000",
        "cus_T00000",
        "customer",
    )
    assert referral.email == "customer0@shop.example" and referral.link_code == "ada0"
    lead = source.referrals[3]
    assert (lead.status, lead.processor_customer_id, lead.customer_key) == ("lead", "", "rw-cust-3")
    # due -> approved, voided -> void; amounts are cents.
    assert Counter(c.status for c in source.commissions) == {"approved": 75, "pending": 25, "paid": 25, "void": 25}
    first = source.commissions[0]
    assert first == CommissionRow(
        where="commissions.json item 1",
        source_id="com-0000",
        partner_source_id="aff-0000",
        referral_source_id="ref-0000",
        sale_source_id="sale-0000",
        sale_amount_minor=first.sale_amount_minor,
        commission_amount_minor=first.commission_amount_minor,
        currency="USD",
        status="approved",
        created_at=datetime(2025, 3, 17, 9, 0, tzinfo=UTC),
        due_at=datetime(2025, 4, 16, 9, 0, tzinfo=UTC),
    )
    assert first.sale_amount_minor in (1900, 2900, 4900, 9900, 19900)
    assert {c.currency for c in source.commissions} == {"USD", "EUR", "VND"}


def test_affiliate_csv_with_bom_crlf_other_column_order_and_extra_column():
    source = rewardful.read(files("rewardful", "affiliates.csv"))
    # One row per referred customer: 12 affiliates repeat, and one joins late with a taken token.
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (13, 12, 28, 0)
    assert refusals(source) == [
        ("affiliates.csv line 7", "partner", "email is missing"),
        (
            "affiliates.csv line 11",
            "link",
            "code 'ada0' is already the code of partner ada.okafor0@example.com (affiliates.csv line 2)",
        ),
        ("affiliates.csv line 16", "referral", "stripe_customer_id '12345' is not a Stripe customer id (cus_...)"),
    ]
    ada = source.partners[0]
    assert (ada.where, ada.source_id, ada.name, ada.payout_email) == (
        "affiliates.csv line 2",
        "ada.okafor0@example.com",
        "Ada Okafor",
        "pay.ada0@example.net",
    )
    late = next(p for p in source.partners if p.email == "late.joiner@example.com")
    assert late.where == "affiliates.csv line 11"
    assert source.referrals[0].processor_customer_id == "cus_T00000" and source.referrals[0].status == "customer"


def test_csv_with_the_template_old_headers():
    content = b"Affiliate Email,Affiliate First Name,Affiliate Last Name,Imported ID\nsam@example.com,Sam,Lee,cus_1\n"
    source = rewardful.read([("old.csv", content)])
    assert [p.email for p in source.partners] == ["sam@example.com"]
    assert [r.processor_customer_id for r in source.referrals] == ["cus_1"]


def test_csv_missing_required_columns_is_refused_naming_them():
    with pytest.raises(ImportFileError, match="affiliates.csv: missing required columns: first_name, last_name"):
        rewardful.read([("affiliates.csv", b"email,token\nsam@example.com,sam\n")])


def test_unknown_files_are_refused():
    with pytest.raises(ImportFileError, match="orders.csv: not a file this import knows"):
        rewardful.read([("orders.csv", b"order_id,total\n1,10\n")])
    with pytest.raises(ImportFileError, match="things.json: not a file this import knows"):
        rewardful.read([("things.json", b'[{"colour": "red"}]')])
    with pytest.raises(ImportFileError, match="broken.json: not valid JSON"):
        rewardful.read([("broken.json", b'[{"id": ')])
    with pytest.raises(ImportFileError, match="No files given"):
        rewardful.read([])


def test_reading_twice_gives_the_same_source():
    assert rewardful.read(files("rewardful", *JSON_FILES)) == rewardful.read(files("rewardful", *JSON_FILES))


@pytest.mark.django_db
def test_end_to_end_dry_run_run_and_rerun():
    check_end_to_end("rewardful", files("rewardful", *JSON_FILES))


@pytest.mark.django_db
def test_end_to_end_affiliate_csv():
    check_end_to_end("rewardful", files("rewardful", "affiliates.csv"))


def test_junk_rows_are_refused_never_raised():
    check_junk("rewardful")


def test_the_fixture_files_are_what_the_builder_writes():
    assert build()["rewardful"] == dict(files("rewardful", *build()["rewardful"]))


def test_a_quoted_field_over_two_lines_keeps_the_next_rows_line_numbers():
    content = b'email,first_name,last_name,token\r\nsam@example.com,"Sam\r\nSecond line",Lee,sam\r\n\r\n,No,Email,x\r\n'
    source = rewardful.read([("a.csv", content)])
    assert source.partners[0].where == "a.csv line 2"
    assert refusals(source) == [("a.csv line 5", "partner", "email is missing")]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfeemail\n", "a.csv: not UTF-8 text"),
        (b"", "a.csv: the file is empty"),
        (b"email,first_name,last_name\n" + b'"' + b"x" * 200_000 + b'"\n', "a.csv: not a readable CSV"),
    ],
)
def test_unreadable_csv_is_refused_as_a_whole(content, message):
    with pytest.raises(ImportFileError, match=message):
        rewardful.read([("a.csv", content)])


def test_csv_junk_cells_are_refused_row_by_row():
    content = (
        "email,first_name,last_name,token,stripe_customer_id\n"
        "a@example.com,A,B,has space,cus_1\n"
        "not-an-email,C,D,c,cus_2\n"
        f"b@example.com,E,F,{'t' * 101},cus_3\n"
        "c@example.com,G,H,ok\x00,cus_4\n"
        "short@example.com\n"
    ).encode()
    source = rewardful.read([("a.csv", content)])
    assert refusals(source) == [
        ("a.csv line 2", "link", "code 'has space' has a space: a link could not carry it"),
        ("a.csv line 3", "partner", "email 'not-an-email' is not an email address"),
        ("a.csv line 4", "link", "code is longer than 100 characters"),
    ]
    assert [p.email for p in source.partners] == [
        "a@example.com",
        "b@example.com",
        "c@example.com",
        "short@example.com",
    ]
    assert [r.source_id for r in source.referrals] == ["cus_1", "cus_3", "cus_4"]


def test_json_with_a_bom_and_crlf_reads():
    content = b'\xef\xbb\xbf{"data": [\r\n{"id": "a1", "email": "X@Example.com", "first_name": "X", "links": []}\r\n]}'
    source = rewardful.read([("affiliates.json", content)])
    assert [(p.source_id, p.email) for p in source.partners] == [("a1", "x@example.com")]


def test_a_payouts_file_is_not_taken_for_commissions():
    payout = b'{"data": [{"id": "p1", "amount": 1470, "currency": "USD", "state": "paid", "affiliate": {"id": "a"}}]}'
    with pytest.raises(ImportFileError, match="payouts.json: not a file this import knows"):
        rewardful.read([("payouts.json", payout)])
