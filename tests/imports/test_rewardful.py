import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db.models import Q

from commissions.models import Commission
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.platforms import PLATFORMS
from imports.records import CommissionRow, ImportFileError
from programs.models import Partner, ReferralLink
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end, imported_ids
from tests.imports.platform_fuzz import check_junk
from tests.imports.test_refunds_after_move import stripe_charge
from tests.stripe_payloads import ACCOUNT, event, post_event
from tracking.models import ClickEvent, ProcessorEvent

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
    assert {c.currency for c in source.commissions if c.status != "void"} == {"USD", "EUR", "VND"}


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


# The fixtures written from Rewardful's published REST reference (rewardful_api/README.md names each field's source).
API = "rewardful_api"
ADA = "17f53305-3f09-5da1-a803-067f1ea64032"
BEN = "c325517e-5b24-5f1b-87c4-74e5a3bea9ca"
CLEO = "5bf55ad0-a175-5aae-8fb1-a9360efd8d48"
DEV = "054e6fe1-26b5-5c34-9076-12e10e316fb8"
EVE = "a2a78f76-f9ed-51dd-8b52-33f259a941b7"
# What Rewardful says each affiliate is owed and payable now (due, not paid), per currency, in cents.
OWED = {ADA: {"USD": 3000}, BEN: {"EUR": 2400 + 1290}, CLEO: {"USD": 1980}, DEV: {"USD": 2000}}


def api_source():
    return rewardful.read(files(API))


def test_published_shapes_read_with_no_row_refused():
    source = api_source()
    assert source.refusals == []
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (5, 6, 8, 11)
    partners = {row.source_id: row for row in source.partners}
    assert [(partners[key].payout_email, partners[key].payout_rail) for key in (ADA, BEN, CLEO)] == [
        ("ada.payouts@example.net", "paypal"),
        ("ben.petrov@wise.example", "wise"),
        ("", ""),
    ]
    assert sorted((link.code, link.partner_source_id) for link in source.links) == [
        ("ada", ADA),
        ("ada-yt", ADA),
        ("ben-petrov", BEN),
        ("cleo", CLEO),
        ("dev", DEV),
        ("eve", EVE),
    ]
    statuses = Counter(row.status for row in source.referrals)
    assert statuses == {"customer": 5, "lead": 1, "visitor": 2}
    lead = next(row for row in source.referrals if row.status == "lead")
    assert (lead.partner_source_id, lead.email, lead.processor_customer_id, lead.link_code) == (
        CLEO,
        "ivy@customer.example",
        "cus_Rw0Cleo1Ivy",
        "cleo",
    )
    coupon = next(row for row in source.referrals if row.processor_customer_id == "cus_Rw0Cleo2Jon")
    assert (coupon.status, coupon.link_code) == ("customer", "")  # came by the coupon: no link
    assert Counter(row.status for row in source.commissions) == {"approved": 5, "pending": 2, "paid": 2, "void": 2}
    assert {row.currency for row in source.commissions if row.status != "void"} == {"USD", "EUR"}
    # Every sale names its Stripe charge, for a refund after the move.
    assert all(row.processor_payment_id.startswith("ch_3Q") for row in source.commissions if row.status != "void")


def test_disabled_and_suspicious_affiliates_arrive_deactivated_in_rewardfuls_words():
    partners = {row.source_id: row for row in api_source().partners}
    assert {key: row.deactivated for key, row in partners.items()} == {
        ADA: "",
        BEN: "",
        CLEO: "",
        DEV: "disabled on Rewardful",
        EVE: "marked suspicious on Rewardful",
    }


@pytest.mark.parametrize(
    "state, deactivated",
    [("active", ""), (None, ""), ("Disabled", "disabled on Rewardful"), ("inactive", "state inactive on Rewardful")],
)
def test_any_state_but_active_deactivates(state, deactivated):
    affiliate = {"id": "a1", "email": "a@example.com", "first_name": "A", "links": []}
    if state is not None:
        affiliate["state"] = state
    [partner] = rewardful.read([("affiliates.json", json.dumps({"data": [affiliate]}).encode())]).partners
    assert partner.deactivated == deactivated


def test_reported_owed_is_commission_stats_unpaid_the_due_and_pending_this_import_leaves_owed():
    source = api_source()
    reported = {row.source_id: dict(row.reported_owed) for row in source.partners}
    # Unpaid is due plus pending (Rewardful's own word for both); GBP, which the service does not record, is left out.
    assert reported == {
        ADA: {"USD": 4500},
        BEN: {"EUR": 3690, "USD": 0},
        CLEO: {"USD": 1980},
        DEV: {"USD": 2500},
        EVE: {},
    }
    arriving: dict[str, dict[str, int]] = {}
    for row in source.commissions:
        if row.status in ("pending", "approved"):
            by = arriving.setdefault(row.partner_source_id, {})
            by[row.currency] = by.get(row.currency, 0) + row.commission_amount_minor
    assert {key: {c: a for c, a in by.items() if a} for key, by in reported.items() if by} == arriving


def test_voided_commissions_and_visitors_are_skipped_by_their_state_before_anything_else_is_read():
    commissions = {
        "data": [
            # A currency the service does not record, no amount: voided, so not owed, never refused.
            {"id": "c1", "state": "voided", "currency": "GBP", "amount": None, "sale": {"affiliate": {"id": "a1"}}},
            {"id": "c2", "state": "voided", "currency": "XYZ", "amount": "12.5", "affiliate_id": "a1"},
        ]
    }
    referrals = {"data": [{"id": "r1", "conversion_state": "visitor", "customer": None, "affiliate": {"id": "a1"}}]}
    affiliates = {"data": [{"id": "a1", "email": "a@example.com", "first_name": "A", "links": []}]}
    source = rewardful.read(
        [
            ("affiliates.json", json.dumps(affiliates).encode()),
            ("referrals.json", json.dumps(referrals).encode()),
            ("commissions.json", json.dumps(commissions).encode()),
        ]
    )
    assert source.refusals == []
    assert [(row.source_id, row.status) for row in source.commissions] == [("c1", "void"), ("c2", "void")]
    assert [(row.source_id, row.status) for row in source.referrals] == [("r1", "visitor")]


def _with(path: str, value: Any, kind: str = "affiliates") -> list[tuple[str, bytes]]:
    """The published fixtures with one field of the first item of a kind's first page replaced."""
    chosen = []
    for name, content in files(API):
        if name == f"{kind}-1.json":
            payload = json.loads(content)
            target = payload["data"][0]
            *parents, last = path.split(".")
            for key in parents:
                target = target[key]
            target[last] = value
            content = json.dumps(payload).encode()
        chosen.append((name, content))
    return chosen


@pytest.mark.parametrize(
    "path, value, kind, field",
    [
        ("links", "eve", "affiliates", "links"),
        ("commission_stats", {"USD": {"unpaid": 0}}, "affiliates", "commission_stats.currencies"),
        (
            "commission_stats.currencies.GBP.unpaid",
            {"cents": "0.00"},
            "affiliates",
            "commission_stats.currencies.GBP.unpaid.cents",
        ),
        ("commission_stats.currencies.GBP.unpaid", 0, "affiliates", "commission_stats.currencies.GBP.unpaid.cents"),
        ("sale", "74e37d3b-03c5-4bfc-841c-a79d5799551a", "commissions", "sale"),
        ("customer", "cus_Rw0Ada1Fred", "referrals", "customer"),
    ],
)
def test_a_recognised_file_whose_fields_contradict_the_reader_is_refused_naming_the_field(path, value, kind, field):
    with pytest.raises(ImportFileError) as refused:
        rewardful.read(_with(path, value, kind))
    assert refused.value.message.startswith(f"{kind}-1.json: item 1: {field} is not ")


def _balances(program) -> dict[str, dict[str, int]]:
    partners = imported_ids(program, "rewardful", "partner")
    balances = ledger_balances(partner_ids=partners.values())
    return {key: {c: a for c, a in balances.get(pid, {}).items() if a} for key, pid in partners.items()}


@pytest.mark.django_db
def test_end_to_end_on_the_published_shapes_balances_exact_per_currency_and_a_rerun_creates_nothing():
    program = check_end_to_end("rewardful", files(API))
    assert {key: by for key, by in _balances(program).items() if by} == OWED


@pytest.mark.django_db
def test_published_shapes_counts_skipped_visitors_and_voided_and_deactivated_partners():
    program = ProgramFactory.create(hold_days=30)
    report = import_source(program, api_source(), dry_run=False)
    counts = report.counts_dict()
    assert counts["referral"] == {"created": 6, "matched": 0, "skipped": 2, "refused": 0}
    assert counts["commission"] == {"created": 9, "matched": 0, "skipped": 2, "refused": 0}
    partners = imported_ids(program, "rewardful", "partner")
    inactive = Partner.objects.filter(pk__in=partners.values(), is_active=False).values_list("pk", flat=True)
    assert set(inactive) == {partners[DEV], partners[EVE]}
    off = ReferralLink.objects.filter(program=program, is_active=False).values_list("short_link", flat=True)
    assert sorted(off) == ["dev", "eve"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query, partner, code",
    [
        ("via=ada", ADA, "ada"),  # Rewardful's default link
        ("via=ada-yt&utm_source=youtube", ADA, "ada-yt"),  # an affiliate's second link
        ("via=ben-petrov", BEN, "ben-petrov"),
        ("ref=cleo", CLEO, "cleo"),  # data-rewardful-params="ref" (help.rewardful.com/en/articles/12856689)
        ("rfsn=ben-petrov", BEN, "ben-petrov"),  # data-rewardful-params="rfsn, ref": the help article's example
    ],
)
def test_a_click_on_every_documented_rewardful_link_format_counts_for_the_right_partner(
    api_client, query, partner, code
):
    program = ProgramFactory.create(hold_days=30, link_aliases=["ref", "rfsn"])
    import_source(program, api_source(), dry_run=False)
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/pricing?{query}", "program_id": program.pk},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["partner_code"] == code
    event = ClickEvent.objects.get(program=program)
    assert event.partner_id == imported_ids(program, "rewardful", "partner")[partner]


@pytest.mark.django_db
def test_a_click_on_a_disabled_affiliates_link_does_not_count(api_client):
    program = ProgramFactory.create(hold_days=30)
    import_source(program, api_source(), dry_run=False)
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": "https://shop.example.com/?via=dev", "program_id": program.pk},
        format="json",
    )
    assert response.status_code == 410, response.json()
    assert not ClickEvent.objects.filter(program=program).exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("stripe_webhook_secret")
def test_a_stripe_refund_of_an_imported_sales_charge_reverses_its_commission(
    client, django_capture_on_commit_callbacks
):
    program = ProgramFactory.create(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)
    assert import_source(program, api_source(), dry_run=False).refusals == []
    ada = imported_ids(program, "rewardful", "partner")[ADA]
    commission = Commission.objects.select_related("sale").get(
        Q(sale__provider_payment_id="ch_3QaDa2LkdIwHu7ix0aaa0002"), program=program
    )
    assert (commission.sale.provider, commission.status, commission.amount_cents) == (
        "import:rewardful",
        "approved",
        3000,
    )
    # sale.charge_amount_cents: 10000 and 800 of tax, refunded in full in Stripe after the move.
    charge = stripe_charge(charge_id="ch_3QaDa2LkdIwHu7ix0aaa0002", amount=10800, refunds=[("re_3QaDa2Refund", 10800)])
    payload = event("charge.refunded", charge)
    with django_capture_on_commit_callbacks(execute=True):
        assert post_event(client, payload).status_code == 200
    processed = ProcessorEvent.objects.get(event_id=payload["id"])
    commission.refresh_from_db()
    assert processed.outcome == f"reversed: commission #{commission.pk} reduced by 3000"
    assert commission.status == "reversed"
    assert ledger_balances(partner_ids=[ada])[ada].get("USD", 0) == 0


def test_the_api_fixtures_are_every_page_of_each_list_in_rewardfuls_envelope():
    pages: dict[str, list[dict[str, Any]]] = {}
    for name, content in files(API):
        payload = json.loads(content)
        assert set(payload) == {"pagination", "data"}, name
        assert payload["pagination"]["count"] == len(payload["data"]), name
        pages.setdefault(name.rsplit("-", 1)[0], []).append(payload["pagination"])
    for kind, chain in pages.items():
        # Page n names n-1 and n+1; the last names none (the curl lines stop there); the counts add up.
        assert [(p["previous_page"], p["current_page"], p["next_page"]) for p in chain] == [
            (None, 1, 2),
            (1, 2, None),
        ], kind
        assert sum(p["count"] for p in chain) == chain[0]["total_count"], kind


@pytest.mark.django_db
def test_the_dry_run_sets_rewardfuls_unpaid_beside_what_arrives_and_every_currency_matches():
    program = ProgramFactory.create(hold_days=30)
    report = import_source(program, api_source(), dry_run=True)
    figures = {b.currency: (b.expected_minor, b.reported_minor, b.mismatch_count) for b in report.balances}
    # USD: Ada 45.00 (due and pending), Cleo 19.80, Dev 25.00; EUR: Ben 36.90.
    assert figures == {"EUR": (3690, 3690, 0), "USD": (8980, 8980, 0)}


@pytest.mark.parametrize(
    "header, row",
    [
        # help.rewardful.com/en/articles/1988486, as it reads now ...
        (
            "stripe_customer_id,first_name,last_name,email,paypal_email,wise_email,token",
            "cus_1,Sam,Lee,sam@example.com,pay@example.net,,sam",
        ),
        # ... as it read before (Imported ID, Wise Email) ...
        (
            "Imported ID,First Name,Last Name,Email,PayPal Email,Wise Email,Token",
            "cus_1,Sam,Lee,sam@example.com,pay@example.net,,sam",
        ),
        # ... and first (Affiliate ... columns, no token).
        (
            "Stripe Customer ID,Affiliate Email,Affiliate First Name,Affiliate Last Name,Affiliate PayPal Email",
            "cus_1,sam@example.com,Sam,Lee,pay@example.net",
        ),
    ],
)
def test_every_documented_spelling_of_rewardfuls_affiliate_template_reads(header, row):
    source = rewardful.read([("affiliates.csv", f"{header}\n{row}\n".encode())])
    assert source.refusals == []
    [partner] = source.partners
    assert (partner.email, partner.name, partner.payout_email, partner.payout_rail) == (
        "sam@example.com",
        "Sam Lee",
        "pay@example.net",
        "paypal",
    )
    assert [r.processor_customer_id for r in source.referrals] == ["cus_1"]
    assert [link.code for link in source.links] == (["sam"] if "oken" in header else [])
