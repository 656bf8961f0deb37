"""Tolt's reader on fixtures in the shape of docs.tolt.com's v1 reference (tests/imports/fixtures/tolt/README.md names
each field's page) and of its v2 reference (tests/imports/fixtures/tolt_v2/README.md). The v1 fixtures replaced the
earlier ones, which had a flat customers list, a `paypal_email` Tolt does not send and no refunds."""

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.platforms import PLATFORMS
from imports.records import ImportFileError, Source
from programs.models import ReferralLink
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import TOLT_PARTNER_STATUS, build, files
from tests.imports.platform_e2e import check_end_to_end, imported_ids
from tests.imports.platform_fuzz import WHERE, mutate
from tracking.models import ClickEvent

tolt = PLATFORMS["tolt"]
REFUSED_COMMISSIONS = {"comm_gbp", "comm_decimals", "comm_ghost"}


def refusals(source: Source) -> list[tuple[str, str, str]]:
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def by_id(source: Source) -> dict[str, Any]:
    return {row.source_id: row for row in source.commissions}


def raw(name: str) -> list[dict[str, Any]]:
    payload = json.loads(dict(files("tolt", name))[name])
    data = payload["data"]
    return data["data"] if isinstance(data, dict) else data


def test_platform_entry():
    assert (tolt.label, tolt.link_param, tolt.stripe_metadata_keys) == ("Tolt", "ref", ("tolt_referral",))


def test_counts_and_every_bad_row():
    source = tolt.read(files("tolt"))
    # 150 sales, a renewal, four refunds (kept as void rows of nothing, counted as skipped) and two rejected rows.
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (
        40,
        40,
        120,
        157,
    )
    assert refusals(source) == [
        ("commissions-1.json item 31", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)"),
        ("commissions-1.json item 72", "commission", "amount 1234.5 in minor units has decimals"),
        ("commissions-1.json item 113", "commission", "partner part_ghost is not in the partners file"),
        ("customers-1.json item 61", "referral", "no customer: neither an email nor a customer_id"),
        ("links-1.json item 11", "link", "code 'ada0' is already the code of partner part_0000 (links-1.json item 1)"),
        ("links-1.json item 31", "link", "partner part_noemail was refused (partners-1.json item 21)"),
        ("partners-1.json item 21", "partner", "email is missing"),
    ]


def test_payout_emails_come_over_from_payout_details():
    source = tolt.read(files("tolt"))
    documented = {
        item["id"]: item["payout_details"].get("email")
        for name in ("partners-1.json", "partners-2.json")
        for item in raw(name)
        if item.get("payout_details")
    }
    assert len(documented) == 14
    got = {row.source_id: row.payout_email for row in source.partners if row.payout_email}
    assert got == documented
    assert Counter(row.payout_rail for row in source.partners if row.payout_email) == {"paypal": 7, "wise": 7}
    assert all(row.payout_rail == "" for row in source.partners if not row.payout_email)


def test_fields_statuses_charges_and_the_program_currency():
    source = tolt.read(files("tolt"))
    assert [(link.code, link.partner_source_id) for link in source.links[:2]] == [
        ("ada0", "part_0000"),
        ("ben1", "part_0001"),
    ]
    canceled, lead = source.referrals[0], source.referrals[3]
    assert (canceled.processor_customer_id, canceled.customer_key, canceled.status) == ("cus_T00000", "", "customer")
    assert (lead.processor_customer_id, lead.customer_key, lead.status) == ("", "user-3", "lead")
    rows = by_id(source)
    second = rows["comm_0001"]
    assert (second.currency, second.sale_source_id, second.referral_source_id, second.partner_source_id) == (
        "USD",  # currency null: the program's currency_code
        "ch_0001",  # the charge, so a Stripe refund after the move can find the sale
        "cust_0001",
        "part_0001",
    )
    # Revenue and charge null on the commission: the transaction's.
    from_transaction = rows["comm_0003"]
    transaction = next(item for item in raw("transactions-1.json") if item["id"] == "txn_0003")
    assert (from_transaction.sale_source_id, from_transaction.sale_amount_minor) == ("ch_0003", transaction["amount"])
    assert {rows["comm_0008"].currency, rows["comm_0009"].currency} == {"EUR", "VND"}
    # Cents as a number ("amount": 1999) and as a string ("1999") are the same.
    amounts = {item["id"]: item["amount"] for item in raw("commissions-1.json")}
    assert isinstance(amounts["comm_0000"], int) and isinstance(amounts["comm_0001"], str)
    assert rows["comm_0001"].commission_amount_minor == int(amounts["comm_0001"])


def tolt_balances() -> dict[tuple[str, str], int]:
    """What Tolt shows each partner as owed: approved commissions, refunds (negative) included, per currency; the
    refused rows left out."""
    owed: dict[tuple[str, str], int] = {}
    for item in raw("commissions-1.json"):
        if item["status"] != "approved" or item["id"] in REFUSED_COMMISSIONS:
            continue
        key = (item["partner_id"], item["currency"] or item["program"]["currency_code"])
        owed[key] = owed.get(key, 0) + int(item["amount"])
    return {key: amount for key, amount in owed.items() if amount}


def test_refunds_net_against_what_they_refund():
    source = tolt.read(files("tolt"))
    rows = by_id(source)
    refunds = {item["id"]: item for item in raw("commissions-1.json") if item["type"] == "refund"}
    assert len(refunds) == 4 and all(int(item["amount"]) < 0 for item in refunds.values())
    # The refund rows themselves owe nothing.
    assert all((rows[i].status, rows[i].commission_amount_minor) == ("void", 0) for i in refunds)
    originals = {item["id"]: item for item in raw("commissions-1.json")}

    def refunded(refund_id: str) -> Any:
        charge = refunds[refund_id]["charge_id"] or refunds[refund_id]["transaction_id"]
        return next(
            row
            for row in source.commissions
            if row.source_id not in refunds and row.sale_source_id == charge and row.partner_source_id
        )

    full_0, full_1, half = refunded("comm_refund_0"), refunded("comm_refund_1"), refunded("comm_refund_2")
    assert (full_0.status, full_0.commission_amount_minor) == ("void", 0)
    assert (full_1.status, full_1.commission_amount_minor) == ("void", 0)
    half_before = int(originals[half.source_id]["amount"])
    assert (half.status, half.commission_amount_minor) == ("approved", half_before - half_before // 2)
    # The refund of a sale paid out already comes off the partner's next approved commission.
    paid = refunded("comm_refund_3")
    assert paid.status == "paid" and paid.commission_amount_minor == int(originals[paid.source_id]["amount"])
    renewal = rows["comm_renewal"]
    assert renewal.commission_amount_minor == int(originals["comm_renewal"]["amount"]) + int(
        refunds["comm_refund_3"]["amount"]
    )


def test_the_readers_balances_are_toltes():
    source = tolt.read(files("tolt"))
    owed: dict[tuple[str, str], int] = {}
    for row in source.commissions:
        if row.status == "approved":
            key = (row.partner_source_id, row.currency)
            owed[key] = owed.get(key, 0) + row.commission_amount_minor
    assert {key: amount for key, amount in owed.items() if amount} == tolt_balances()
    assert {currency for _, currency in tolt_balances()} == {"USD", "EUR", "VND"}


def commission_file(*items: dict[str, Any]) -> tuple[str, bytes]:
    return ("commissions.json", json.dumps({"success": True, "has_more": False, "data": list(items)}).encode())


def reward(id_: str, amount: Any, status: str = "approved", **more: Any) -> dict[str, Any]:
    item = {"id": id_, "amount": amount, "status": status, "type": "reward", "partner_id": "part_1"}
    item |= {"customer_id": "cust_1", "currency": "USD", "transaction_id": f"txn_{id_}", "charge_id": f"ch_{id_}"}
    return item | more


def test_a_refund_larger_than_the_partners_balance_is_refused_by_name():
    source = tolt.read(
        [
            commission_file(
                reward("a", "1000"),
                reward("r", "-1500", type="refund", transaction_id="txn_a", charge_id="ch_a"),
            )
        ]
    )
    assert refusals(source) == [
        (
            "commissions.json item 2",
            "commission",
            "refund r: 500 USD (minor units) more than partner part_1 has in approved commissions; not carried over",
        )
    ]
    assert (source.commissions[0].status, source.commissions[0].commission_amount_minor) == ("void", 0)


def test_a_refund_of_a_rejected_sale_takes_nothing_more():
    source = tolt.read(
        [
            commission_file(
                reward("a", "1000", status="rejected"),
                reward("b", "700"),
                reward("r", "-1000", type=None, transaction_id="txn_a", charge_id="ch_a"),  # negative: a refund
            )
        ]
    )
    assert source.refusals == []
    assert [(row.source_id, row.status, row.commission_amount_minor) for row in source.commissions] == [
        ("a", "void", 0),  # a void row's amount is not read
        ("b", "approved", 700),
        ("r", "void", 0),
    ]


PARTNER = {"id": "part_7", "email": "p@example.com", "first_name": "P", "payout_details": {}}
CUSTOMER = {"id": "cust_1", "customer_id": "cus_9", "email": "a@b.co", "partner_id": "part_7", "status": "active"}


@pytest.mark.parametrize(
    "shape",
    [
        lambda items: items,
        lambda items: {"success": True, "has_more": False, "total_count": len(items), "data": items},
        lambda items: {"success": True, "has_more": False, "total_count": len(items), "data": {"data": items}},
        # Pages joined, as `jq -s . customers-*.json` writes them.
        lambda items: [{"success": True, "has_more": True, "data": {"data": items}}, {"success": True, "data": []}],
    ],
    ids=["list", "data", "data.data", "pages"],
)
def test_every_documented_envelope_is_read(shape):
    uploads = [
        ("partners.json", json.dumps(shape([PARTNER])).encode()),
        ("customers.json", json.dumps(shape([CUSTOMER])).encode()),
        ("commissions.json", json.dumps(shape([reward("c", 500, partner_id=None, customer_id="cust_1")])).encode()),
    ]
    source = tolt.read(uploads)
    assert source.refusals == []
    assert [row.partner_source_id for row in source.commissions] == ["part_7"]
    assert [row.processor_customer_id for row in source.referrals] == ["cus_9"]


def test_an_answer_without_a_list_is_refused_by_name():
    with pytest.raises(ImportFileError, match=r'customers.json: expected Tolt\'s list answer \{"success"'):
        tolt.read([("customers.json", b'{"success": true, "data": {"items": 3}}')])


def test_promotion_codes_are_read_as_codes():
    # tolt_groups/ and test_tolt_groups.py have the published shape; a code naming no partner is refused.
    codes = b'{"success": true, "data": [{"id": "prc_1", "code": "SUMMER", "type": "percentage", "value": 20}]}'
    source = tolt.read([("codes.json", codes)])
    assert source.codes == []
    assert [(r.where, r.kind, r.reason) for r in source.refusals] == [
        ("codes.json item 1", "code", "partner is missing")
    ]


def test_csv_is_refused():
    with pytest.raises(ImportFileError, match="partners.csv: Tolt files are the API's JSON answers"):
        tolt.read([("partners.csv", b"email\n")])


@pytest.mark.django_db
def test_end_to_end_balances_are_toltes_and_a_rerun_creates_nothing():
    program = check_end_to_end("tolt", files("tolt"))
    partners = imported_ids(program, "tolt", "partner")
    balances = ledger_balances(partner_ids=partners.values())
    got = {(pid, currency): amount for pid, by in balances.items() for currency, amount in by.items() if amount}
    assert got == {(partners[p], currency): amount for (p, currency), amount in tolt_balances().items()}


def test_junk_rows_are_refused_never_raised():
    """platform_fuzz.check_junk for Tolt's envelopes (customers nest their list in data.data)."""
    rng = random.Random("tolt-junk")
    originals = [(name, json.loads(content)) for name, content in files("tolt")]
    for _ in range(60):
        uploaded = []
        for name, payload in originals:
            rows = payload["data"]["data"] if isinstance(payload["data"], dict) else payload["data"]
            rows = [mutate(row, rng) if rng.random() < 0.4 else row for row in rows[:12]]
            uploaded.append((name, json.dumps(rows).encode()))
        try:
            source = tolt.read(uploaded)
        except ImportFileError:
            continue
        for kind in (source.partners, source.links, source.referrals, source.commissions, source.refusals):
            for row in kind:
                assert WHERE.match(row.where), row
        for row in source.commissions:
            assert row.commission_amount_minor >= 0 and row.sale_amount_minor >= 0
            assert row.status in ("pending", "approved", "paid", "void")


def test_the_docs_curl_lines_write_the_fixture_files():
    """docs/import.md's Tolt curl lines save the files the fixtures are, with the expands the reader relies on."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "import.md").read_text()
    section = docs[docs.index("### Tolt (`tolt`)") : docs.index("### PartnerStack")]
    lines = re.findall(r'"\$T/(\w+)\?([^"]+)" > (\S+\.json)', section)
    saved = {endpoint: query for endpoint, query, _ in lines}
    assert set(saved) == {"partners", "links", "customers", "transactions", "commissions"}
    assert "expand[]=program" in saved["partners"]
    assert "expand[]=partner" in saved["commissions"] and "expand[]=program" in saved["commissions"]
    written = {name for _, _, name in lines}
    assert written == {f"{endpoint}-1.json" for endpoint in saved}
    assert written <= {name for name, _ in files("tolt")}


def test_the_fixture_files_are_what_the_builder_writes():
    assert build()["tolt"] == dict(files("tolt", *build()["tolt"]))


def test_rejected_rows_are_skipped_by_status_before_currency_or_amount():
    source = tolt.read(files("tolt"))
    rows = by_id(source)
    # In the fixtures: a rejected commission in GBP and one whose amount is "n/a"; neither is refused.
    assert (rows["comm_void_gbp"].status, rows["comm_void_junk"].status) == ("void", "void")
    assert not [r for r in source.refusals if "comm_void" in r.reason]
    junk = [
        reward("x1", "??", status="rejected", currency="XYZ"),
        reward("x2", {"cents": 3}, status="refunded", currency=None),
        reward("x3", "-500", status="rejected", type="refund", currency="GBP"),
        reward("x4", "500", status="declined", created_at="not a time"),
        reward("x5", "1000", currency="GBP"),  # approved: read, and refused by its currency
    ]
    source = tolt.read([commission_file(*junk)])
    assert [(row.source_id, row.status) for row in source.commissions] == [(f"x{n}", "void") for n in range(1, 5)]
    assert refusals(source) == [
        ("commissions.json item 5", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)")
    ]


def test_a_commission_of_nothing_is_void():
    # v2 zeroes an unpaid commission whose transaction was refunded (transactions/refund).
    source = tolt.read([commission_file(reward("z", "0"), reward("n", 0, status="pending"))])
    assert [(row.status, row.commission_amount_minor) for row in source.commissions] == [("void", 0), ("void", 0)]


def test_partners_switched_off_on_tolt_arrive_deactivated_in_toltes_word():
    source = tolt.read(files("tolt"))
    off = {row.source_id: row.deactivated for row in source.partners if row.deactivated}
    assert off == {
        "part_0005": "suspended on Tolt (Self-referrals)",
        "part_0007": "rejected on Tolt",
        "part_0009": "pending approval on Tolt",
    }
    assert set(TOLT_PARTNER_STATUS) == {5, 7, 9}
    # Neither API version says what a partner is owed: nothing reported.
    assert all(row.reported_owed == () for row in source.partners)
    v2 = tolt.read(files(V2))
    assert {row.source_id: row.deactivated for row in v2.partners} == {
        "part_v2ada": "",
        "part_v2ben": "",
        "part_v2cleo": "suspended on Tolt",
        "part_v2dev": "rejected on Tolt",
        "part_v2eli": "pending approval on Tolt",
    }
    # A v2 partner without a status, stamped suspended_at, is suspended.
    stamped = {"id": "part_s", "email": "s@example.com", "first_name": "S", "suspended_at": "2025-09-01T00:00:00Z"}
    answer = {"success": True, "message": "Success", "data": [stamped], "has_more": False}
    [partner] = tolt.read([("partners.json", json.dumps(answer).encode())]).partners
    assert partner.deactivated == "suspended on Tolt"


# v2's list answers (fields and sources: fixtures/tolt_v2/README.md).
V2 = "tolt_v2"
# What Tolt shows each v2 partner as owed (approved, unpaid, refunds netted), per currency, in minor units.
V2_OWED = {("part_v2ada", "USD"): 980, ("part_v2ben", "EUR"): 1980, ("part_v2cleo", "USD"): 1500 - 1200}


def test_v2_answers_read_with_no_row_refused():
    source = tolt.read(files(V2))
    assert source.refusals == []
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (5, 5, 4, 10)
    rows = by_id(source)
    # Currency null: the program's, by the commission's program_id (programs-1.json); not the first program's.
    assert (rows["comm_v2_01"].currency, rows["comm_v2_05"].currency) == ("USD", "EUR")
    # Revenue null: the transaction's; money as strings.
    assert (rows["comm_v2_01"].sale_amount_minor, rows["comm_v2_01"].processor_payment_id) == (4900, "ch_v2a1")
    assert rows["comm_v2_03"].status == "void"  # zeroed by its refunded transaction
    # The paid commission's negative reversal comes off what the partner is owed next, as on Tolt.
    assert (rows["comm_v2_06"].commission_amount_minor, rows["comm_v2_07"].status) == (300, "paid")
    assert (rows["comm_v2_08"].status, rows["comm_v2_09"].status, rows["comm_v2_10"].status) == ("void",) * 3
    owed: dict[tuple[str, str], int] = {}
    for row in source.commissions:
        if row.status == "approved":
            key = (row.partner_source_id, row.currency)
            owed[key] = owed.get(key, 0) + row.commission_amount_minor
    assert owed == V2_OWED
    customers = {row.source_id: row for row in source.referrals}
    assert (customers["cus_v2a1"].processor_customer_id, customers["cus_v2a1"].status) == ("cus_StripeA1", "customer")
    # No customer_id: v2's identifier (what tolt.js signup was given) is the customer key.
    assert (customers["cus_v2a2"].customer_key, customers["cus_v2a2"].status) == ("user-42", "lead")
    assert customers["cus_v2b1"].status == "customer"  # suspended: it paid (active_at)
    # v2's partner has no payout fields.
    assert all(row.payout_email == "" for row in source.partners)


@pytest.mark.django_db
def test_v2_end_to_end_balances_are_toltes_and_a_rerun_creates_nothing():
    program = check_end_to_end("tolt", files(V2))
    partners = imported_ids(program, "tolt", "partner")
    balances = ledger_balances(partner_ids=partners.values())
    got = {(pid, currency): amount for pid, by in balances.items() for currency, amount in by.items() if amount}
    assert got == {(partners[p], currency): amount for (p, currency), amount in V2_OWED.items()}


def click(api_client: Any, program: Any, query: str) -> Any:
    return api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/pricing?{query}", "program_id": program.pk},
        format="json",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fixtures", "clicks"),
    [
        # Partner 0's ?ref= link, partner 4's ?via= link, partner 8's ?aff= link (links-1.json's param).
        ("tolt", [("ref=ada0", "part_0000"), ("via=eli4", "part_0004"), ("aff=ivo8", "part_0008")]),
        ("tolt_v2", [("ref=ada", "part_v2ada"), ("via=ada-yt", "part_v2ada"), ("aff=ben", "part_v2ben")]),
    ],
    ids=["v1", "v2"],
)
def test_a_click_on_every_link_format_counts_for_the_imported_partner(api_client, fixtures, clicks):
    # docs/import.md: turn on the alias ref; via and aff are always read.
    program = ProgramFactory.create(hold_days=30, link_aliases=["ref"])
    import_source(program, tolt.read(files(fixtures)), dry_run=False)
    partners = imported_ids(program, "tolt", "partner")
    for query, _ in clicks:
        response = click(api_client, program, f"{query}&utm_source=partner")
        assert response.status_code == 200, (query, response.json())
        assert response.json()["partner_code"] == query.partition("=")[2]
    events = ClickEvent.objects.filter(program=program).order_by("pk")
    assert [event.partner_id for event in events] == [partners[partner] for _, partner in clicks]


@pytest.mark.django_db
def test_a_deactivated_partners_links_arrive_off_and_count_no_click(api_client):
    program = ProgramFactory.create(hold_days=30, link_aliases=["ref"])
    import_source(program, tolt.read(files(V2)), dry_run=False)
    assert not ReferralLink.objects.get(program=program, short_link="cleo").is_active
    assert click(api_client, program, "ref=cleo").status_code != 200
    assert not ClickEvent.objects.filter(program=program).exists()


@pytest.mark.django_db
def test_a_link_on_the_programs_own_parameter_counts_with_that_alias(api_client):
    # A link's param is the program's choice (links/create: "The tracking parameter name"): its alias is that name.
    links = {"success": True, "data": [{"id": "lnk_1", "param": "partner", "value": "p7", "partner_id": "part_7"}]}
    uploads = [
        ("partners.json", json.dumps({"success": True, "data": [PARTNER]}).encode()),
        ("links.json", json.dumps(links).encode()),
    ]
    program = ProgramFactory.create(hold_days=30, link_aliases=["partner"])
    import_source(program, tolt.read(uploads), dry_run=False)
    response = click(api_client, program, "partner=p7")
    assert response.status_code == 200, response.json()
    assert ClickEvent.objects.get(program=program).partner_id == imported_ids(program, "tolt", "partner")["part_7"]


def test_the_docs_v2_curl_lines_write_the_v2_fixture_files():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "import.md").read_text()
    section = docs[docs.index("### Tolt (`tolt`)") : docs.index("### PartnerStack")]
    lines = re.findall(r'"\$T2/([\w-]+)\?([^"]+)" > (\S+\.json)', section)
    assert {endpoint for endpoint, _, _ in lines} == {
        "programs",
        "partners",
        "links",
        "customers",
        "transactions",
        "commissions",
        "groups",
        "promotion-codes",
    }
    written = {name for _, _, name in lines}
    assert written == {f"{endpoint.replace('-', '_')}-1.json" for endpoint, _, _ in lines}
    # The groups and promotion codes are in tolt_groups/ (test_tolt_groups.py).
    assert written <= {name for name, _ in (*files(V2), *files("tolt_groups"))}


def test_v1_partners_with_v2_lists_bring_the_payout_emails():
    # docs/import.md: v2's lists, and v1's partners list for payout emails (v2's partner has no payout fields).
    v2 = dict(files(V2))
    partners = [item for name in ("partners-1.json", "partners-2.json") for item in json.loads(v2.pop(name))["data"]]
    v1 = [
        {key: item[key] for key in ("id", "email", "first_name", "last_name", "company_name", "status", "created_at")}
        | {"payout_method": "paypal" if item["id"] == "part_v2ada" else "none"}
        | {"payout_details": {"email": "ada.pay@example.net"} if item["id"] == "part_v2ada" else {}}
        for item in partners
    ]
    answer = {"success": True, "has_more": False, "total_count": len(v1), "data": v1}
    source = tolt.read([("partners-v1.json", json.dumps(answer).encode()), *v2.items()])
    assert source.refusals == []
    assert {row.source_id: (row.payout_email, row.payout_rail) for row in source.partners if row.payout_email} == {
        "part_v2ada": ("ada.pay@example.net", "paypal")
    }
    assert len(source.commissions) == len(tolt.read(files(V2)).commissions)
