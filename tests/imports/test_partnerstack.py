import base64
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission, CommissionReview, CommissionStatus
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.platforms import PLATFORMS
from imports.platforms import partnerstack as partnerstack_reader
from imports.platforms.base import gspk
from imports.records import ImportFileError
from programs.models import ReferralLink
from tests.factories import ProgramFactory
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end, imported_ids, row_counts
from tests.imports.platform_fuzz import check_junk
from tracking.models import ClickEvent, Customer

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
        151,
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
        ("rewards.json item 72", "commission", "amount 1234.5 in minor units has decimals"),
        ("rewards.json item 112", "commission", "partner pship_ghost is not in the partners file"),
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
    assert Counter(c.status for c in source.commissions) == {"approved": 75, "pending": 25, "paid": 25, "void": 26}
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


# Files written from PartnerStack's published API v2 shapes (fields and sources: fixtures/partnerstack_api/README.md).
API = "partnerstack_api"
# What PartnerStack says each partner is owed (approved and scheduled, not paid), in USD cents.
OWED = {"part_ada001": 1980 + 1062, "part_ben002": 4315, "part_cleo03": 5000, "part_dee004": 1250}


def test_published_shapes_read_with_no_row_refused():
    source = partnerstack.read(files(API))
    assert source.refusals == []
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (4, 4, 7, 13)
    assert [link.code for link in source.links] == ["ada_k", "ben_k", "cleo_k", "dee_k"]
    # Rewards are in USD whatever the charge's currency (EUR charges included); none refused.
    assert {c.currency for c in source.commissions if c.status != "void"} == {"USD"}
    by_key = {c.source_id: c for c in source.commissions}
    assert by_key["rwrd_0001"].sale_amount_minor == 9900  # a USD charge: its amount
    assert by_key["rwrd_0004"].sale_amount_minor == 0  # an EUR charge with no amount_usd: the sale at the reward's
    # hold: pending and held for review; declined and a test customer's reward: void (skipped).
    statuses = {key: (row.status, bool(row.held_reason)) for key, row in by_key.items()}
    assert statuses == {
        "rwrd_0001": ("approved", False),
        "rwrd_0002": ("approved", False),
        "rwrd_0003": ("pending", True),
        "rwrd_0004": ("approved", False),
        "rwrd_0005": ("paid", False),
        "rwrd_0006": ("pending", False),
        "rwrd_0007": ("void", False),
        "rwrd_0008": ("approved", False),
        "rwrd_0009": ("pending", True),
        "rwrd_0010": ("void", False),
        "rwrd_0011": ("approved", False),  # the archived partner's, still owed
        "rwrd_0012": ("void", False),  # declined, in GBP
        "rwrd_0013": ("void", False),  # a test customer's, with no amount or currency
    }
    # The manual reward (no customer, no transaction) is the partner's, found by the partnership's email.
    assert (by_key["rwrd_0008"].partner_source_id, by_key["rwrd_0008"].referral_source_id) == ("part_cleo03", "")
    # test: true customers are read as visitors: skipped by the import, never real referrals.
    tests = [r.source_id for r in source.referrals if r.status == "visitor"]
    assert tests == ["cust_t1", "cust_t2", "cust_t3"]
    lead = next(r for r in source.referrals if r.source_id == "cust_c2")
    assert (lead.email, lead.customer_key, lead.processor_customer_id, lead.status) == ("", "user-2", "", "lead")


def test_a_usd_reward_on_a_charge_in_another_currency_records_the_sale_in_usd_from_amount_usd():
    rewards = (
        b'{"data": {"has_more": false, "items": [{"key": "r1", "amount": 1062, "currency": "USD",'
        b' "reward_status": "approved", "partnership": {"email": "a@example.com"}, "customer": null,'
        b' "transaction": {"key": "t1", "amount": 4900, "currency": "EUR"}}]}}'
    )
    transactions = (
        b'{"data": {"has_more": false, "items": [{"key": "t1", "amount": 4900, "amount_usd": 5311,'
        b' "currency": "EUR", "customer": {}, "partnership_key": "p1"}]}}'
    )
    partners = b'{"data": {"items": [{"key": "p1", "email": "a@example.com", "partner_key": "a"}]}}'
    source = partnerstack.read(
        [("partnerships.json", partners), ("rewards.json", rewards), ("transactions.json", transactions)]
    )
    assert source.refusals == []
    [reward] = source.commissions
    assert (reward.currency, reward.commission_amount_minor, reward.sale_amount_minor) == ("USD", 1062, 5311)


def _balances(program):
    partners = imported_ids(program, "partnerstack", "partner")
    balances = ledger_balances(partner_ids=partners.values())
    got = {pid: by for pid, by in balances.items() if any(by.values())}
    return {source_id: got.get(pid, {}) for source_id, pid in partners.items()}


@pytest.mark.django_db
def test_published_shapes_import_exact_balances_per_currency_and_a_rerun_creates_nothing():
    source = partnerstack.read(files(API))
    program = ProgramFactory.create(hold_days=30)
    dry = import_source(program, source, dry_run=True).counts_dict()
    assert dry["referral"] == {"created": 4, "matched": 0, "skipped": 3, "refused": 0}  # 3 test customers skipped
    # Declined (one in GBP) and test customers' rewards (one with no amount): skipped, none refused.
    assert dry["commission"] == {"created": 9, "matched": 0, "skipped": 4, "refused": 0}
    done = import_source(program, source, dry_run=False).counts_dict()
    assert done == dry
    assert _balances(program) == {key: {"USD": amount} for key, amount in OWED.items()}
    assert not Customer.objects.filter(program=program, email__startswith="t").exists()
    counts = row_counts()
    rerun = import_source(program, source, dry_run=False).counts_dict()
    assert row_counts() == counts
    assert all(rerun[kind]["created"] == 0 for kind in rerun)
    assert rerun["commission"]["matched"] == 9


@pytest.mark.django_db
def test_held_rewards_arrive_held_for_review_and_no_approval_run_credits_them():
    program = ProgramFactory.create(hold_days=30)
    import_source(program, partnerstack.read(files(API)), dry_run=False)
    held = Commission.objects.filter(program=program, held_at__isnull=False)
    assert sorted(held.values_list("amount_cents", flat=True)) == [1000, 2147]
    assert set(held.values_list("hold_reason", flat=True)) == {partnerstack_reader.HELD_REASON}
    reviews = CommissionReview.objects.filter(commission__in=held)
    assert sorted(reviews.values_list("action", "actor")) == [("held", "import:partnerstack")] * 2
    # Long after every hold period: the approval run approves the pending reward, never the held ones.
    approved = commissions_approve_due(now=timezone.now() + timedelta(days=3650))
    assert approved == 1
    assert all((c.status, c.credited) == (CommissionStatus.PENDING, False) for c in held.all())
    owed = dict(OWED, part_cleo03=OWED["part_cleo03"] + 580)  # the pending reward, now approved
    assert _balances(program) == {key: {"USD": amount} for key, amount in owed.items()}


@pytest.mark.django_db
@pytest.mark.parametrize("alias", ["ps_partner_key", "gspk"])
def test_a_click_with_the_partner_key_in_base64_counts_for_the_imported_partner(api_client, alias):
    # PartnerStack's current links: ?ps_partner_key=<Base64 partner key>&ps_xid=<click id>
    # (docs.partnerstack.com/docs/getting-integrated-with-s2s); the older ones: ?gspk=...&gsxid=...
    program = ProgramFactory.create(hold_days=30, link_aliases=[alias])
    import_source(program, partnerstack.read(files(API)), dry_run=False)
    ben = imported_ids(program, "partnerstack", "partner")["part_ben002"]
    click_id = "gsxid" if alias == "gspk" else "ps_xid"
    query = f"{alias}={gspk('ben_k')}&{click_id}=abc123"
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/?{query}", "program_id": program.pk},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["partner_code"] == "ben_k"
    event = ClickEvent.objects.get(program=program)
    assert event.partner_id == ben


def test_archived_partnerships_arrive_deactivated_and_no_balance_is_reported():
    api = partnerstack.read(files(API))
    assert {row.source_id: row.deactivated for row in api.partners} == {
        "part_ada001": "",
        "part_ben002": "",
        "part_cleo03": "",
        "part_dee004": "archived on PartnerStack",
    }
    generated = partnerstack.read(files("partnerstack"))
    assert [row.source_id for row in generated.partners if row.deactivated] == ["pship_0006"]
    # The partner API's copy of the list names the flag is_archived.
    answer = b'{"data": {"items": [{"key": "p1", "email": "a@example.com", "partner_key": "a", "is_archived": true}]}}'
    [partner] = partnerstack.read([("partnerships.json", answer)]).partners
    assert partner.deactivated == "archived on PartnerStack"
    # No balance is documented on a partnership: nothing reported.
    assert all(row.reported_owed == () for row in api.partners + generated.partners)


def test_declined_and_test_rewards_are_skipped_by_status_before_currency_or_amount():
    customers = b'{"data": {"items": [{"key": "ct", "customer_key": "t", "partnership_key": "p1", "test": true}]}}'
    transactions = (
        b'{"data": {"items": [{"key": "tt", "amount": 100, "currency": "usd", "test": true, "customer": {}}]}}'
    )
    rewards = (
        b'{"data": {"items": ['
        b'{"key": "r1", "amount": "a lot", "currency": "XYZ", "reward_status": "declined",'
        b' "partnership": {"key": "p1"}},'
        b'{"key": "r2", "amount": null, "currency": null, "reward_status": "approved", "partnership": {"key": "p1"},'
        b' "customer": {"external_key": "t"}},'
        b'{"key": "r3", "amount": 1.5, "currency": "GBP", "reward_status": "paid", "partnership": {"key": "p1"},'
        b' "transaction": {"key": "tt"}},'
        b'{"key": "r4", "amount": 500, "currency": "GBP", "reward_status": "approved", "partnership": {"key": "p1"}}]}}'
    )
    source = partnerstack.read(
        [("customers.json", customers), ("transactions.json", transactions), ("rewards.json", rewards)]
    )
    assert [(row.source_id, row.status) for row in source.commissions] == [(f"r{n}", "void") for n in (1, 2, 3)]
    # Owed (approved), so read: refused by its currency.
    assert refusals(source) == [("rewards.json item 4", "commission", "unknown currency 'GBP' (known: USD, EUR, VND)")]


@pytest.mark.django_db
def test_every_documented_link_format_counts_with_the_aliases_the_docs_name(api_client):
    # docs/import.md: turn on ps_partner_key, and gspk for older links.
    program = ProgramFactory.create(hold_days=30, link_aliases=["ps_partner_key", "gspk"])
    import_source(program, partnerstack.read(files(API)), dry_run=False)
    partners = imported_ids(program, "partnerstack", "partner")
    url_safe = base64.urlsafe_b64encode(b"cleo_k").decode().rstrip("=")
    clicks = [
        (f"ps_partner_key={gspk('ada_k')}&ps_xid=c1", "part_ada001"),
        (f"gspk={gspk('ben_k')}&gsxid=c2", "part_ben002"),
        (f"ps_partner_key={url_safe}&ps_xid=c3", "part_cleo03"),
    ]
    for query, _ in clicks:
        response = api_client.post(
            "/api/v1/track/click",
            {"affiliate_url": f"https://shop.example.com/?{query}", "program_id": program.pk},
            format="json",
        )
        assert response.status_code == 200, (query, response.json())
    events = ClickEvent.objects.filter(program=program).order_by("pk")
    assert [event.partner_id for event in events] == [partners[partner] for _, partner in clicks]
    # The archived partner's link arrives off: its clicks count for no one.
    assert not ReferralLink.objects.get(program=program, short_link="dee_k").is_active
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/?ps_partner_key={gspk('dee_k')}", "program_id": program.pk},
        format="json",
    )
    assert response.status_code != 200
    assert ClickEvent.objects.filter(program=program).count() == len(clicks)
