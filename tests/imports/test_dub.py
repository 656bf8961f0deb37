"""Dub import: the builder's generated set (fixtures/dub) and the answers of Dub's API as its OpenAPI and zod schemas
describe them (fixtures/dub_api, each field's source in its README): statuses, banned partners, clawbacks, file
detection, balances per currency, every link form a Dub partner's traffic arrives with, and a Stripe refund of an
imported invoice sale on Stripe API versions from 2025-03-31 (found through Stripe's InvoicePayment list)."""

import json
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import stripe
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission, CommissionStatus
from commissions.selectors import ledger_balances
from imports.engine import import_source
from imports.models import ImportedRecord
from imports.platforms import PLATFORMS
from imports.records import ImportFileError
from programs.models import ReferralLink
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.imports.fixtures.build import build, files
from tests.imports.platform_e2e import check_end_to_end, imported_ids
from tests.imports.platform_fuzz import check_junk
from tests.stripe_account import StripeAccount, stripe_account_serving
from tests.stripe_payloads import ACCOUNT, event, post_event
from tests.stripe_payloads import invoice as stripe_invoice
from tracking.models import ClickEvent, ProcessorEvent
from tracking.stripe.events import processor_event_attempt
from tracking.stripe.services import processor_events_replay

dub = PLATFORMS["dub"]
API = Path(__file__).parent / "fixtures" / "dub_api"

ADA, BEN, CLEO = "pn_1ADAOKAFOR00000000000000", "pn_1BENPETROV00000000000000", "pn_1CLEOQUINN0000000000000"
DEV, ELI, FAY = "pn_1DEVROSSI000000000000000", "pn_1ELISATO0000000000000000", "pn_1FAYTANAKA00000000000000"
# What each partner is owed on Dub and unpaid, per currency (processed, net of owed clawbacks): the README's sums.
OWED = {
    (ADA, "USD"): 2450,
    (BEN, "USD"): 2470,
    (CLEO, "EUR"): 580,
    (CLEO, "USD"): 980,
    (DEV, "USD"): 580,
    (ELI, "VND"): 250000,
}


def refusals(source):
    return [(r.where, r.kind, r.reason) for r in source.refusals]


def api_files() -> list[tuple[str, bytes]]:
    return [(path.name, path.read_bytes()) for path in sorted(API.glob("*.json"))]


def api_items(name: str) -> list[dict[str, Any]]:
    return json.loads((API / name).read_text())


def jsonfile(name: str, body: Any) -> tuple[str, bytes]:
    return (name, json.dumps(body).encode())


def test_platform_entry():
    assert (dub.label, dub.link_param) == ("Dub", "")
    assert dub.stripe_metadata_keys == ("dubCustomerId", "dubCustomerExternalId")


# The builder's generated set ---------------------------------------------------------------------------------------


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
        ("commissions.json item 71", "commission", "earnings: amount 1234.5 in minor units has decimals"),
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
    # A customer listed without its partner is its link's partner's; with no sale counts in the answer, a Stripe
    # customer id makes it a paying customer.
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


# Dub's published shapes (fixtures/dub_api) ---------------------------------------------------------------------


def test_no_documented_row_is_refused():
    source = dub.read(api_files())
    assert refusals(source) == []
    # Six partners over two pages; six partner links (the workspace's own `launch` link is no referral link); six
    # referred customers (the direct one is left out); every commission row, clawbacks kept as void rows.
    assert (len(source.partners), len(source.links), len(source.referrals), len(source.commissions)) == (6, 6, 6, 21)


def test_a_links_file_whose_links_carry_an_external_id_is_read_as_links():
    # GET /links items carry `externalId` (LinkSchema): the file is a links file, not a customers file.
    links = api_items("links-1.json")
    assert links[0]["externalId"] == "partner-ada-main"
    source = dub.read([jsonfile("links-1.json", links)])
    assert refusals(source) == []
    assert [(row.code, row.partner_source_id) for row in source.links] == [
        ("ada", ADA),
        ("ada-blog", ADA),
        ("ben", BEN),
        ("cleo", CLEO),
        ("dev", DEV),
        ("eli", ELI),
    ]


def test_each_list_is_told_by_its_objects_whatever_the_file_is_called():
    named = [(f"page{number}.json", content) for number, (_, content) in enumerate(api_files())]
    assert refusals(dub.read(named)) == []
    assert len(dub.read(named).commissions) == 21


def test_lists_the_import_cannot_use_are_refused_by_name():
    partner_links = [
        {key: link[key] for key in ("id", "domain", "key", "shortLink", "url")} for link in api_items("links-1.json")
    ]
    with pytest.raises(ImportFileError, match="these links name no partner .*GET /links"):
        dub.read([jsonfile("links.json", partner_links)])
    bare = [
        {key: value for key, value in c.items() if key not in ("link", "partner", "programId", "discount")}
        for c in api_items("customers-1.json")
    ]
    with pytest.raises(ImportFileError, match=r"includeExpandedFields=true"):
        dub.read([jsonfile("customers.json", bare)])
    payout = {
        "id": "po_1K0A1PAYOUT0000000000000",
        "invoiceId": None,
        "amount": 2450,
        "currency": "USD",
        "status": "pending",
        "periodStart": None,
        "periodEnd": None,
        "createdAt": "2025-03-31T00:00:00.000Z",
        "initiatedAt": None,
        "paidAt": None,
        "mode": "internal",
        "method": None,
        "partner": {"id": ADA, "name": "Ada Okafor", "email": "ada.okafor@example.com"},
    }
    with pytest.raises(ImportFileError, match="payouts.json: Dub's payouts are not read"):
        dub.read([jsonfile("payouts.json", [payout])])


def test_partners_not_active_on_dub_arrive_deactivated():
    source = dub.read(api_files())
    by_id = {row.source_id: row for row in source.partners}
    assert {pid: row.deactivated for pid, row in by_id.items()} == {
        ADA: "",
        BEN: "",
        CLEO: "",  # archived: still active on Dub (ACTIVE_ENROLLMENT_STATUSES)
        DEV: "banned on Dub (Fraudulent Activity)",
        ELI: "deactivated on Dub",
        FAY: "",  # invited: commission-eligible on Dub
    }
    assert (by_id[ADA].payout_email, by_id[ADA].payout_rail) == ("ada.payouts@example.net", "paypal")
    assert (by_id[BEN].payout_email, by_id[BEN].payout_rail) == ("", "")  # paid through Stripe Connect
    # Dub's answers show no owed-and-unpaid sum per currency (see the reader's docstring).
    assert all(row.reported_owed == () for row in source.partners)


def test_a_paypal_email_is_the_payout_rail_unless_another_method_is_the_default():
    ada = api_items("partners-1.json")[0]
    connect = {**ada, "defaultPayoutMethod": "connect"}
    row = dub.read([jsonfile("partners.json", [connect])]).partners[0]
    assert (row.payout_email, row.payout_rail) == ("ada.payouts@example.net", "")
    unset = {**ada, "defaultPayoutMethod": None}
    assert dub.read([jsonfile("partners.json", [unset])]).partners[0].payout_rail == "paypal"


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("rejected", "application rejected on Dub"),
        ("pending", "application pending on Dub, never approved"),
        ("declined", "declined the invitation on Dub"),
        ("banned", "banned on Dub"),
    ],
)
def test_every_inactive_enrolment_status_has_its_reason(status, reason):
    partner = {**api_items("partners-1.json")[0], "status": status, "bannedReason": None}
    assert dub.read([jsonfile("partners.json", [partner])]).partners[0].deactivated == reason


def test_commission_statuses_holds_clawbacks_and_invoices():
    rows = {row.source_id: row for row in dub.read(api_files()).commissions}

    def of(source_id: str) -> tuple[str, str, int]:
        row = rows[source_id]
        return (row.status, row.currency, row.commission_amount_minor)

    assert of("cm_1A1ADA0000000000000000000") == ("approved", "USD", 2000)  # processed
    assert rows["cm_1A1ADA0000000000000000000"].processor_payment_id == "in_1MtHbELkdIwHu7ixl4OzzPMv"
    assert of("cm_1A2ADA0000000000000000000") == ("paid", "USD", 2000)
    assert of("cm_1A3ADA0000000000000000000") == ("pending", "USD", 1940)
    # Ada's processed clawback of 3.00 takes her latest processed commissions: the click reward (2.50), then 0.50
    # of the lead reward.
    assert of("cm_1A6ADA0000000000000000000")[0] == "void"
    assert of("cm_1A4ADA0000000000000000000") == ("approved", "USD", 450)
    assert of("cm_1A7ADA0000000000000000000")[0] == "void"
    # Ben's pending clawback of 5.00 takes his pending sale, not the one Dub holds for fraud review.
    assert of("cm_1B6BEN0000000000000000000") == ("pending", "USD", 370)
    held = rows["cm_1B2BEN0000000000000000000"]
    assert (held.status, held.commission_amount_minor, held.held_reason) == (
        "pending",
        5970,
        "held for fraud review on Dub",
    )
    assert of("cm_1B4BEN0000000000000000000") == ("approved", "USD", 1000)  # a partner-referral reward
    # refunded, duplicate, fraud and canceled are skipped by their status, even a canceled one in GBP.
    for source_id in ("cm_1A5ADA0000000000000000000", "cm_1B3BEN0000000000000000000", "cm_1C3CLEO000000000000000000"):
        assert of(source_id)[0] == "void"
    assert rows["cm_1D1DEV0000000000000000000"].status == "void"
    assert of("cm_1C1CLEO000000000000000000") == ("approved", "EUR", 580)
    assert of("cm_1E1ELI0000000000000000000") == ("approved", "VND", 250000)
    # Click, lead and referral rewards have no sale (amount 0) and no invoice.
    click = rows["cm_1B4BEN0000000000000000000"]
    assert (click.sale_amount_minor, click.processor_payment_id) == (0, "")


def test_customers_are_leads_until_dub_counts_a_sale():
    referrals = {row.source_id: row for row in dub.read(api_files()).referrals}
    paying = referrals["cus_1C1ADA000000000000000000"]
    assert (paying.status, paying.customer_key, paying.processor_customer_id, paying.link_code) == (
        "customer",
        "user_1001",
        "cus_QAda00000001",
        "ada",
    )
    lead = referrals["cus_1C2ADA000000000000000000"]
    assert (lead.status, lead.email, lead.link_code, lead.partner_source_id) == ("lead", "", "ada-blog", ADA)
    assert "cus_1C7DIRECT00000000000000" not in referrals  # no link and no partner: nobody referred it


def commission_item(**changes: Any) -> dict[str, Any]:
    return {**api_items("commissions-2.json")[-1], **changes}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"status": "approved"}, "status 'approved' is not one of pending, hold, processed, paid, refunded"),
        ({"earnings": "abc"}, "earnings: amount 'abc' is not a number"),
        ({"earnings": None}, "earnings is missing"),
        ({"amount": 12.5}, "amount: amount 12.5 in minor units has decimals"),
        ({"currency": None}, "currency is missing"),
        ({"currency": "gbp"}, "unknown currency 'gbp' (known: USD, EUR, VND)"),
        ({"partner": None}, "partner is missing"),
    ],
)
def test_a_commission_that_contradicts_the_schema_is_refused_naming_the_field(changes, reason):
    source = dub.read([jsonfile("commissions.json", [commission_item(**changes)])])
    assert len(source.refusals) == 1
    assert source.refusals[0].reason.startswith(reason)


def test_rows_that_contradict_the_schema_are_refused_naming_the_field():
    partner = {**api_items("partners-1.json")[0], "links": []}
    customer = api_items("customers-2.json")[-1]
    source = dub.read(
        [
            jsonfile(
                "partners.json",
                [{**partner, "status": "active"}, {**api_items("partners-1.json")[1], "links": [], "status": None}],
            ),
            jsonfile("customers.json", [{**customer, "link": "link_1ADA00000000000000000000"}]),
        ]
    )
    assert [(r.where, r.reason) for r in source.refusals] == [
        ("customers.json item 1", "link is not an object"),
        (
            "partners.json item 1",
            "status 'active' is not one of approved, archived, invited, banned, deactivated, rejected, pending, "
            "declined",
        ),
        ("partners.json item 2", "status is missing (Dub's enrolment status)"),
    ]


def test_a_clawback_larger_than_what_the_partner_is_owed_is_refused():
    clawback = commission_item(
        id="cm_1CLAWBACK0000000000000000", type="custom", amount=0, earnings=-999999, invoiceId=None, customer=None
    )
    source = dub.read([jsonfile("commissions.json", [commission_item(), clawback])])
    assert [r.reason for r in source.refusals] == [
        f"clawback cm_1CLAWBACK0000000000000000: earnings 997999 USD (minor units) more than partner {ADA} is owed "
        "in USD; not carried over"
    ]


@pytest.mark.django_db
def test_api_fixtures_end_to_end_balances_exact_per_currency():
    program = check_end_to_end("dub", api_files())
    partners = imported_ids(program, "dub", "partner")
    balances = ledger_balances(partner_ids=partners.values())
    got = {(pid, currency): amount for pid, by in balances.items() for currency, amount in by.items() if amount}
    assert got == {(partners[p], currency): amount for (p, currency), amount in OWED.items()}


@pytest.mark.django_db
def test_banned_and_deactivated_partners_arrive_with_their_links_off():
    program = ProgramFactory.create(hold_days=30)
    report = import_source(program, dub.read(api_files()), dry_run=False)
    assert any(entry.startswith(f"partner {DEV} ") and "banned on Dub" in entry for entry in report.deactivated)
    active = dict(ReferralLink.objects.filter(program=program).values_list("short_link", "is_active"))
    assert active == {"ada": True, "ada-blog": True, "ben": True, "cleo": True, "dev": False, "eli": False}


@pytest.mark.django_db
def test_a_commission_dub_holds_for_review_is_not_credited_by_the_approval_run():
    program = ProgramFactory.create(hold_days=0)
    import_source(program, dub.read(api_files()), dry_run=False)
    record = ImportedRecord.objects.get(
        program=program, platform="dub", kind="commission", source_id="cm_1B2BEN0000000000000000000"
    )
    commissions_approve_due(now=timezone.now() + timedelta(days=400))
    held = Commission.objects.get(pk=record.object_id)
    assert held.status == CommissionStatus.PENDING and held.held_at is not None


# Every link form a Dub partner's traffic arrives with --------------------------------------------------------------


@pytest.mark.django_db
def test_a_click_on_every_dub_link_form_that_can_work_counts_for_its_partner(api_client):
    program = ProgramFactory.create(hold_days=30, link_aliases=["ref"])
    import_source(program, dub.read(api_files()), dry_run=False)
    partners = imported_ids(program, "dub", "partner")
    cases = [
        # Where Dub's short link go.shop.example/ada redirects (getFinalUrl: ?via=<key>, and dub_id, Dub's click id),
        # and where it lands once the owner's short domain redirects there itself.
        ("https://shop.example/?via=ada&dub_id=GWGrkftJdYlZD2mq", "ada", ADA),
        # A group's "Query Parameter" link structure (constructPartnerLink: <site>?via=<key>), any page of the site.
        ("https://shop.example/pricing?via=ada-blog", "ada-blog", ADA),
        # Dub's script with data-query-param="ref" (@dub/analytics): ?ref=<key>, read once `ref` is an alias.
        ("https://shop.example/?ref=ben", "ben", BEN),
        # An archived partner's link keeps working, as on Dub.
        ("https://shop.example/?via=cleo&utm_source=newsletter", "cleo", CLEO),
    ]
    for url, code, partner in cases:
        response = api_client.post(
            "/api/v1/track/click", {"affiliate_url": url, "program_id": program.pk}, format="json"
        )
        assert response.status_code == 200, (url, response.json())
        assert response.json()["partner_code"] == code, url
        assert ClickEvent.objects.filter(program=program).latest("pk").partner_id == partners[partner], url
    assert ClickEvent.objects.filter(program=program).count() == len(cases)
    # A banned partner's link was switched off on the way in.
    response = api_client.post(
        "/api/v1/track/click",
        {"affiliate_url": "https://shop.example/?via=dev&dub_id=x4CLb5y6sy37DfMY", "program_id": program.pk},
        format="json",
    )
    assert response.status_code != 200
    assert ClickEvent.objects.filter(program=program).count() == len(cases)


# Refunds on Stripe API versions from 2025-03-31 ("basil") -----------------------------------------------------------

INVOICE = "in_1MtHbELkdIwHu7ixl4OzzPMv"  # the processed commission cm_1A1ADA…'s invoiceId
PAYMENT_INTENT = "pi_3MtHbFLkdIwHu7ix1a2b3c4d"
CHARGE = "ch_3MtHbFLkdIwHu7ix1YVYb6ch"
SECRET_KEY = "sk_test_dubimport_platform"


def invoice_payment(invoice: str, payment_intent: str, amount: int = 10000) -> dict[str, Any]:
    """Stripe's Invoice Payment object (docs.stripe.com/api/invoice-payment/object; stripe/openapi fixtures3.json
    `invoice_payment`), as GET /v1/invoice_payments lists it."""
    return {
        "id": "inpay_1M3USa2eZvKYlo2CBjuwbq0N",
        "object": "invoice_payment",
        "amount_paid": amount,
        "amount_requested": amount,
        "created": 1739264000,
        "currency": "usd",
        "invoice": invoice,
        "is_default": True,
        "livemode": True,
        "payment": {"type": "payment_intent", "payment_intent": payment_intent},
        "status": "paid",
        "status_transitions": {"canceled_at": None, "paid_at": 1739264000},
    }


def basil_charge(*, amount: int, amount_refunded: int) -> dict[str, Any]:
    """A refunded Charge as charge.refunded carries it on 2025-03-31.basil and later: no `invoice` (removed, Stripe
    changelog "Adds support for multiple (partial) payments on invoices"; absent from stripe/openapi fixtures3.json
    `charge`), and no `refunds` list (not included since 2022-11-15)."""
    return {
        "id": CHARGE,
        "object": "charge",
        "amount": amount,
        "amount_captured": amount,
        "amount_refunded": amount_refunded,
        "balance_transaction": "txn_3MtHbFLkdIwHu7ix0Aq2Ct8y",
        "captured": True,
        "created": 1739264000,
        "currency": "usd",
        "customer": "cus_QAda00000001",
        "description": "Subscription update",
        "livemode": True,
        "metadata": {},
        "paid": True,
        "payment_intent": PAYMENT_INTENT,
        "refunded": amount_refunded >= amount,
        "status": "succeeded",
    }


def basil_refund(refund_id: str, amount: int) -> dict[str, Any]:
    """Stripe's Refund object (stripe/openapi fixtures3.json `refund`): its charge and payment intent, no invoice."""
    return {
        "id": refund_id,
        "object": "refund",
        "amount": amount,
        "balance_transaction": "txn_3MtHbFLkdIwHu7ix0Aq2Ct8z",
        "charge": CHARGE,
        "created": 1739350400,
        "currency": "usd",
        "metadata": {},
        "payment_intent": PAYMENT_INTENT,
        "reason": "requested_by_customer",
        "receipt_number": None,
        "source_transfer_reversal": None,
        "status": "succeeded",
        "transfer_reversal": None,
    }


def basil(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "api_version": "2025-03-31.basil"}


@pytest.fixture
def invoice_payments(monkeypatch, settings) -> Iterator[StripeAccount]:
    with stripe_account_serving(monkeypatch, settings, SECRET_KEY) as account:
        yield account


@pytest.fixture
def dub_program(db):
    program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)
    source = dub.read(api_files())
    assert import_source(program, source, dry_run=False).refusals == []
    return program


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks, stripe_webhook_secret):
    def send(payload: dict[str, Any]) -> ProcessorEvent:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_event(client, payload)
        assert response.status_code == 200, response.content
        return ProcessorEvent.objects.get(event_id=payload["id"])

    return send


def invoice_commission(program) -> Commission:
    record = ImportedRecord.objects.get(
        program=program, platform="dub", kind="commission", source_id="cm_1A1ADA0000000000000000000"
    )
    return Commission.objects.select_related("sale").get(pk=record.object_id)


def usd_balance(commission: Commission) -> int:
    return ledger_balances(partner_ids=[commission.partner_id]).get(commission.partner_id, {}).get("USD", 0)


@pytest.mark.django_db
class TestRefundsOnBasil:
    def test_a_charge_refunded_without_its_invoice_finds_the_sale_through_stripes_invoice_payments(
        self, dub_program, invoice_payments, deliver, django_capture_on_commit_callbacks
    ):
        invoice_payments.payments.append(invoice_payment(INVOICE, PAYMENT_INTENT))
        invoice_payments.refunds.append(basil_refund("re_3MtHbFLkdIwHu7ix0i2Pq8dd", 10000))
        commission = invoice_commission(dub_program)
        assert (commission.sale.provider_payment_id, usd_balance(commission)) == (INVOICE, 2450)

        payload = basil(event("charge.refunded", basil_charge(amount=10000, amount_refunded=10000)))
        processed = deliver(payload)
        commission.refresh_from_db()
        assert processed.status == "processed" and processed.sale_id == commission.sale_id
        assert processed.outcome == f"reversed: commission #{commission.pk} reduced by 2000"
        assert (commission.status, usd_balance(commission)) == ("reversed", 450)
        assert commission.applied_refund_ids == ["re_3MtHbFLkdIwHu7ix0i2Pq8dd"]
        # Asked of the program's connected account, with the platform's key: the invoices by the charge's payment
        # intent, then the charge's refunds (a charge carries none on this API version).
        assert invoice_payments.requests == [
            {
                "path": "/v1/invoice_payments",
                "query": {
                    "payment[type]": "payment_intent",
                    "payment[payment_intent]": PAYMENT_INTENT,
                    "status": "paid",
                    "limit": "100",
                },
                "authorization": f"Bearer {SECRET_KEY}",
                "stripe_account": ACCOUNT,
            },
            {
                "path": "/v1/refunds",
                "query": {"charge": CHARGE, "limit": "100"},
                "authorization": f"Bearer {SECRET_KEY}",
                "stripe_account": ACCOUNT,
            },
        ]

        # A redelivery stores nothing; a replay reverses nothing more.
        deliver(payload)
        with django_capture_on_commit_callbacks(execute=True):
            processor_events_replay(event_pks=[processed.pk])
        processed.refresh_from_db()
        commission.refresh_from_db()
        assert processed.outcome == "already reversed"
        assert (commission.refund_count, usd_balance(commission)) == (1, 450)

    def test_a_refund_created_refunds_the_imported_commission_in_proportion_once(
        self, dub_program, invoice_payments, deliver
    ):
        invoice_payments.payments.append(invoice_payment(INVOICE, PAYMENT_INTENT))
        invoice_payments.refunds.append(basil_refund("re_3MtHbFLkdIwHu7ix0i2Pq8dd", 2500))
        commission = invoice_commission(dub_program)
        refund = deliver(basil(event("refund.created", basil_refund("re_3MtHbFLkdIwHu7ix0i2Pq8dd", 2500))))
        commission.refresh_from_db()
        assert refund.outcome == f"refunded: commission #{commission.pk} reduced by 500"
        assert (commission.status, commission.deducted_cents, usd_balance(commission)) == ("refunded", 500, 1950)
        # charge.refunded then reports the same 25.00 refunded, Stripe lists that refund: nothing more.
        charge = deliver(basil(event("charge.refunded", basil_charge(amount=10000, amount_refunded=2500))))
        commission.refresh_from_db()
        assert charge.outcome == "refund already applied"
        assert (commission.refund_count, usd_balance(commission)) == (1, 1950)

    def test_stripe_down_the_event_fails_and_is_retried_nothing_applied_until_then_nothing_twice(
        self, dub_program, invoice_payments, client, stripe_webhook_secret
    ):
        invoice_payments.payments.append(invoice_payment(INVOICE, PAYMENT_INTENT))
        invoice_payments.fail = 1
        commission = invoice_commission(dub_program)
        payload = basil(event("refund.created", basil_refund("re_3MtHbFLkdIwHu7ix0i2Pq8dd", 10000)))
        assert post_event(client, payload).status_code == 200  # stored; its processing is the worker's
        stored = ProcessorEvent.objects.get(event_id=payload["id"])

        with pytest.raises(stripe.APIError):
            processor_event_attempt(event_pk=stored.pk)
        stored.refresh_from_db()
        commission.refresh_from_db()
        assert (stored.status, stored.attempts) == ("failed", 1) and "An unknown error occurred" in stored.last_error
        assert (commission.status, commission.refund_count, usd_balance(commission)) == ("approved", 0, 2450)

        # The task's retry, once Stripe answers: applied once; another attempt changes nothing.
        assert processor_event_attempt(event_pk=stored.pk) == "processed"
        commission.refresh_from_db()
        assert (commission.status, commission.refund_count, usd_balance(commission)) == ("reversed", 1, 450)
        assert processor_event_attempt(event_pk=stored.pk) == "processed"
        commission.refresh_from_db()
        assert (commission.refund_count, usd_balance(commission)) == (1, 450)

    def test_a_payment_of_no_known_invoice_is_ignored_as_before(self, dub_program, invoice_payments, deliver):
        invoice_payments.payments.append(invoice_payment("in_1SomeOtherInvoice0000000", PAYMENT_INTENT))
        processed = deliver(basil(event("charge.refunded", basil_charge(amount=10000, amount_refunded=10000))))
        assert (processed.status, processed.outcome) == ("ignored", "no recorded sale for this payment")
        assert invoice_commission(dub_program).status == "approved"

    def test_no_stripe_call_without_the_platform_key_or_an_invoice_sale(
        self, dub_program, invoice_payments, deliver, settings
    ):
        invoice_payments.payments.append(invoice_payment(INVOICE, PAYMENT_INTENT))
        settings.STRIPE_SECRET_KEY = ""
        processed = deliver(basil(event("charge.refunded", basil_charge(amount=10000, amount_refunded=10000))))
        assert (processed.status, processed.outcome) == ("ignored", "no recorded sale for this payment")
        settings.STRIPE_SECRET_KEY = SECRET_KEY
        other = ProgramFactory(stripe_account_id="acct_1NoInvoiceSales", hold_days=0)
        ignored = deliver(
            basil(event("refund.created", basil_refund("re_other", 100), account=other.stripe_account_id))
        )
        assert ignored.outcome == "no recorded sale for this payment"
        assert invoice_payments.requests == []
        # An older API version's charge names its invoice (null when none): nothing is asked either.
        older = deliver(
            event("charge.refunded", {**basil_charge(amount=10000, amount_refunded=10000), "invoice": None})
        )
        assert older.outcome == "no recorded sale for this payment" and invoice_payments.requests == []

    def test_a_sale_recorded_here_by_its_basil_invoice_is_found_the_same_way(self, invoice_payments, deliver):
        # A basil invoice names no payment intent, so its sale is recorded by the invoice id: the same lookup finds it.
        program = ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)
        customer = CustomerFactory.create(
            link=ReferralLinkFactory(program=program), processor_customer_id="cus_QRenew1"
        )
        paid = {key: value for key, value in stripe_invoice(amount=5000, customer="cus_QRenew1").items()}
        del paid["payment_intent"]
        recorded = deliver(basil(event("invoice.payment_succeeded", paid)))
        sale = recorded.sale
        assert sale is not None and sale.processor_event_id == paid["id"] and sale.customer_id == customer.pk
        commission = Commission.objects.get(sale=sale)

        invoice_payments.payments.append(invoice_payment(paid["id"], "pi_3RenewPaymentIntent00001", amount=5000))
        refund = {**basil_refund("re_3RenewRefund0000000001", 5000), "payment_intent": "pi_3RenewPaymentIntent00001"}
        processed = deliver(basil(event("refund.created", {**refund, "charge": "ch_3RenewCharge0000000001"})))
        commission.refresh_from_db()
        assert processed.sale_id == sale.pk and commission.status == "reversed"
