"""The portal's Payouts page (/portal/payouts): how the partner is paid (Stripe's onboarding, or a PayPal or Wise
account), and the payouts made to them with each one's statement, built through the real payout services. Partners
are untrusted: every route is tried signed out, with an owner's session, without its CSRF token, with another
partner's ids and cursors, and with junk; nothing of another partner or account ever shows."""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import unescape
from urllib.parse import urlsplit

import pytest
import requests
import stripe
from django.test import Client
from django.utils import timezone

from commissions.models import Commission
from commissions.services import refund_apply
from core.pagination import cursor_of
from payouts import stripe_rail
from payouts.models import Payout, PayoutAccount, PayoutStatus, Rail
from payouts.services import (
    PayoutError,
    manual_rail_set,
    payout_mark_failed,
    payout_mark_paid,
    run_confirm,
    run_export,
    run_preview,
)
from portal import payouts as portal_payouts
from portal.commissions import customer_reference
from programs.models import Partner, PartnerAccount, Program
from tests.factories import MembershipFactory, PartnerProgramFactory, ProgramFactory
from tests.payouts.money import ledger_exact
from tests.portal.test_commissions_balance import commission_for, credited_for, invite, joined, partner_of
from tests.stripe_fake.fixtures import stripe_server  # noqa: F401  (fixture)
from tests.stripe_fake.server import StripeFake

pytestmark = pytest.mark.django_db

PAGE = "/portal/payouts"
RETURN_URL = "https://track.example.test/portal/payouts/stripe/return"  # tests' PUBLIC_BASE_URL
REFRESH_URL = "https://track.example.test/portal/payouts/stripe/refresh"
POSTS = ("/portal/payouts/stripe", "/portal/payouts/manual")
GETS = (PAGE, "/portal/payouts/stripe/return", "/portal/payouts/stripe/refresh")


@pytest.fixture
def program():
    return ProgramFactory.create(name="Acme Pro", hold_days=30)


@pytest.fixture
def browser(program):
    return joined(invite(program))


@pytest.fixture
def partner(program, browser):
    return partner_of(program)


@pytest.fixture
def stripe_on(settings):
    settings.STRIPE_SECRET_KEY = "sk_test_portal"


def paid_by_paypal(partner: Partner, email: str = "pat-paypal@example.com") -> None:
    assert partner.account is not None
    manual_rail_set(account=partner.account, rail=Rail.PAYPAL, payout_email=email, holder_name="Pat Doe")


def pay(program: Program, currency: str = "USD") -> list[Payout]:
    """An owner's run over the program's due balances, previewed and confirmed through the services."""
    run = run_preview(program=program, currency=currency, actor="user:owner")
    return run_confirm(run_id=run.pk, actor="user:owner")


def paid_out(partner: Partner, program: Program, amounts: list[int]) -> Payout:
    """One payout covering a commission on each sale amount, settled as paid (so the next run can pay again)."""
    for amount in amounts:
        credited_for(partner, program, amount=amount)
    [payout] = [made for made in pay(program) if made.partner_id == partner.pk]
    assert payout_mark_paid(payout_id=payout.pk, actor="user:owner")
    return payout


def page_html(browser: Client, query: str = "") -> str:
    response = browser.get(PAGE + query)
    assert response.status_code == 200
    return response.content.decode()


def text(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))).strip()


@dataclass(frozen=True)
class ShownPayout:
    """A row of the payouts table, and its statement's lines as (sale date, amount, customer)."""

    date: str
    program: str
    amount: str
    rail: str
    status: str
    statement: list[tuple[str, str, str]]


def found_text(pattern: str, html: str) -> str:
    found = re.search(pattern, html, re.S)
    return text(found[1]) if found else ""


def payout_rows(html: str) -> list[ShownPayout]:
    rows = []
    for row in re.findall(r'<tr class="payout">(.*?)</tr>', html, re.S):
        cells = [text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        lines = [
            (
                found_text(r'class="sale-date">Sale of ([^<]*)<', line),
                found_text(r'class="amount">([^<]*)<', line),
                found_text(r'class="customer">([^<]*)<', line),
            )
            for line in re.findall(r"<li>(.*?)</li>", row, re.S)
        ]
        date, program, amount, rail, status = cells[:5]
        rows.append(ShownPayout(date, program, amount, rail, status, lines))
    return rows


def setup_state(html: str) -> tuple[str, str]:
    """The "How you are paid" section's state and its words."""
    found = re.search(r'data-payout-state="(\w+)">(.*?)</p>', html, re.S)
    assert found is not None
    return found[1], text(found[2])


def requirements(html: str) -> list[str]:
    found = re.search(r'<ul class="requirements">(.*?)</ul>', html, re.S)
    return [text(item) for item in re.findall(r"<li>(.*?)</li>", found[1], re.S)] if found else []


def messages_of(html: str) -> list[str]:
    found = re.search(r'<ul class="messages">(.*?)</ul>', html, re.S)
    return [text(item) for item in re.findall(r"<li[^>]*>(.*?)</li>", found[1], re.S)] if found else []


def stripe_account(partner: Partner, **fields: object) -> PayoutAccount:
    assert partner.account is not None
    return PayoutAccount.objects.create(account=partner.account, rail=Rail.STRIPE, **fields)


# --- How you are paid ---------------------------------------------------------------------------------------------


def test_without_a_payout_account_the_page_says_so_and_offers_stripe_when_configured(browser, stripe_on):
    html = page_html(browser)
    assert setup_state(html)[0] == "none"
    assert "You have not set up payouts yet" in html
    assert 'action="/portal/payouts/stripe"' in html and "Set up payouts with Stripe" in html
    assert 'action="/portal/payouts/manual"' in html
    assert "No payouts yet." in html
    assert not PayoutAccount.objects.exists()  # reading the page makes nothing


def test_without_stripe_configured_only_the_manual_rail_is_offered(browser, settings):
    settings.STRIPE_SECRET_KEY = ""
    html = page_html(browser)
    assert 'action="/portal/payouts/stripe"' not in html and "Stripe" not in text(html).replace("Stripe's", "")
    assert 'action="/portal/payouts/manual"' in html


def test_stripe_not_started(browser, partner, stripe_on):
    stripe_account(partner)
    state, words = setup_state(page_html(browser))
    assert (state, words) == ("stripe_not_started", "Stripe: onboarding not started.")


def test_stripe_onboarding_not_finished_says_what_is_still_due_in_words(browser, partner, stripe_on):
    stripe_account(
        partner,
        stripe_account_id="acct_1PortalPat",
        requirements_due=[
            "individual.verification.document",
            "external_account",
            "tos_acceptance.date",
            "tos_acceptance.ip",
            "individual.dob.day",
            "individual.dob.month",
            "individual.address.city",
            "some.future_requirement",
        ],
        disabled_reason="requirements.past_due",
    )
    html = page_html(browser)
    assert setup_state(html) == ("stripe_unfinished", "Stripe: onboarding not finished. Stripe still needs:")
    assert requirements(html) == [
        "a photo of an identity document",
        "a bank account or debit card to be paid to",
        "accepting Stripe's terms of service",
        "your date of birth",
        "your address",
        "some.future_requirement",  # one not known here is shown as Stripe names it
    ]
    assert "Finish setting up payouts with Stripe" in html
    assert "acct_1PortalPat" not in html and "requirements.past_due" not in html


def test_stripe_unfinished_with_nothing_due_is_being_checked(browser, partner, stripe_on):
    stripe_account(partner, stripe_account_id="acct_1Checking", details_submitted=True)
    html = page_html(browser)
    assert setup_state(html)[1] == (
        "Stripe: onboarding not finished. Stripe is checking your details; nothing more is asked of you yet."
    )
    assert requirements(html) == []


def test_stripe_ready(browser, partner, stripe_on):
    stripe_account(partner, stripe_account_id="acct_1Ready", transfers_active=True, payouts_enabled=True)
    html = page_html(browser)
    assert setup_state(html) == ("stripe_ready", "Stripe: ready. Payouts are sent to your Stripe account.")
    assert 'action="/portal/payouts/stripe"' not in html  # nothing left to set up


def test_paypal(browser, partner):
    paid_by_paypal(partner)
    html = page_html(browser)
    assert setup_state(html) == ("manual", "PayPal: payouts are sent to pat-paypal@example.com.")
    assert "In the name of Pat Doe." in html
    assert 'value="paypal" checked' in html and 'value="pat-paypal@example.com"' in html


def test_wise_by_email_or_bank_reference(browser, partner):
    assert partner.account is not None
    manual_rail_set(account=partner.account, rail=Rail.WISE, bank_reference="GB33BUKB20201555555555")
    html = page_html(browser)
    assert setup_state(html) == ("manual", "Wise: payouts are sent to GB33BUKB20201555555555.")
    assert 'value="wise" checked' in html
    manual_rail_set(account=partner.account, rail=Rail.WISE, payout_email="Pat.Wise@Example.com")
    assert setup_state(page_html(browser))[1] == "Wise: payouts are sent to pat.wise@example.com."


# --- Stripe's onboarding --------------------------------------------------------------------------------------------


@pytest.fixture
def onboarding(monkeypatch):
    """payouts.stripe_rail.onboarding_link patched: records its calls, answers Stripe's onboarding address."""
    calls: list[dict[str, object]] = []

    def link(**kwargs: object) -> str:
        calls.append(kwargs)
        return "https://connect.stripe.com/setup/e/acct_1Fake/abc"

    monkeypatch.setattr(stripe_rail, "onboarding_link", link)
    return calls


def test_set_up_with_stripe_sends_the_partner_to_stripes_onboarding(browser, partner, stripe_on, onboarding):
    response = browser.post("/portal/payouts/stripe")
    assert response.status_code == 302
    assert response["Location"] == "https://connect.stripe.com/setup/e/acct_1Fake/abc"
    [call] = onboarding
    assert call == {"account": partner.account, "return_url": RETURN_URL, "refresh_url": REFRESH_URL}


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (stripe.APIConnectionError("connection refused"), portal_payouts.STRIPE_FAILED),
        (stripe.InvalidRequestError("No such account: 'acct_x'", param="account"), portal_payouts.STRIPE_FAILED),
        (stripe.AuthenticationError("Invalid API Key provided: sk_test_****"), portal_payouts.STRIPE_FAILED),
        (PayoutError("Your payout account cannot use Stripe"), "Your payout account cannot use Stripe"),
    ],
)
def test_a_stripe_failure_comes_back_to_the_page_with_a_clear_message(
    browser, partner, stripe_on, monkeypatch, error, shown
):
    def refused(**kwargs: object) -> str:
        raise error

    monkeypatch.setattr(stripe_rail, "onboarding_link", refused)
    response = browser.post("/portal/payouts/stripe")
    assert response.status_code == 303 and response["Location"] == PAGE
    html = page_html(browser)
    assert messages_of(html) == [shown]
    assert "sk_test" not in html and "acct_x" not in html


def test_stripe_not_configured_is_refused_without_calling_stripe(browser, partner, settings, onboarding):
    settings.STRIPE_SECRET_KEY = ""
    response = browser.post("/portal/payouts/stripe")
    assert response.status_code == 400
    assert portal_payouts.STRIPE_UNAVAILABLE in response.content.decode()
    assert onboarding == []


def test_the_return_reads_the_account_again_and_says_what_is_still_due(browser, partner, stripe_on, monkeypatch):
    stripe_account(partner, stripe_account_id="acct_1Back")
    refreshed: list[int] = []

    def refresh(payout_account: PayoutAccount) -> PayoutAccount:
        refreshed.append(payout_account.pk)
        payout_account.requirements_due = ["external_account", "individual.verification.document"]
        payout_account.details_submitted = True
        payout_account.save()
        return payout_account

    monkeypatch.setattr(stripe_rail, "account_refresh", refresh)
    response = browser.get("/portal/payouts/stripe/return")
    assert response.status_code == 302 and response["Location"] == PAGE
    html = page_html(browser)
    assert messages_of(html) == [
        "Stripe onboarding saved. Still due: a bank account or debit card to be paid to; "
        "a photo of an identity document."
    ]
    assert refreshed == [PayoutAccount.objects.get(account=partner.account).pk]


def test_the_return_when_onboarding_is_done_says_ready(browser, partner, stripe_on, monkeypatch):
    stripe_account(partner, stripe_account_id="acct_1Done")

    def refresh(payout_account: PayoutAccount) -> PayoutAccount:
        payout_account.transfers_active = payout_account.payouts_enabled = True
        payout_account.save()
        return payout_account

    monkeypatch.setattr(stripe_rail, "account_refresh", refresh)
    browser.get("/portal/payouts/stripe/return")
    html = page_html(browser)
    assert messages_of(html) == ["Stripe onboarding saved: you are ready to be paid."]
    assert setup_state(html)[0] == "stripe_ready"


def test_the_return_survives_stripe_failing_and_a_partner_who_never_started(browser, partner, stripe_on, monkeypatch):
    calls: list[int] = []

    def refused(payout_account: PayoutAccount) -> PayoutAccount:
        calls.append(payout_account.pk)
        raise stripe.APIConnectionError("down")

    monkeypatch.setattr(stripe_rail, "account_refresh", refused)
    assert browser.get("/portal/payouts/stripe/return")["Location"] == PAGE  # nothing to read yet
    assert calls == [] and not PayoutAccount.objects.exists()
    stripe_account(partner, stripe_account_id="acct_1Down")
    response = browser.get("/portal/payouts/stripe/return")
    assert response.status_code == 302 and response["Location"] == PAGE
    assert len(calls) == 1
    assert messages_of(page_html(browser)) == [
        "Stripe onboarding saved. Its state is updated here once Stripe confirms it."
    ]


def test_an_expired_link_asks_for_a_fresh_one_with_a_post(browser, partner, stripe_on, onboarding):
    response = browser.get("/portal/payouts/stripe/refresh")
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'<form method="post" action="/portal/payouts/stripe">', html)
    assert "Continue with Stripe" in html
    assert onboarding == [] and not PayoutAccount.objects.exists()  # a GET makes nothing
    assert browser.post("/portal/payouts/stripe/refresh").status_code == 405
    assert browser.post("/portal/payouts/stripe/return").status_code == 405
    assert browser.get("/portal/payouts/stripe").status_code == 405
    assert browser.get("/portal/payouts/manual").status_code == 405
    assert browser.post(PAGE).status_code == 405


def test_onboarding_through_a_stripe_compatible_server(browser, partner, stripe_server: StripeFake):  # noqa: F811
    """The whole journey against tests/stripe_fake: the Express account made, Stripe's onboarding link followed
    (an expired one sends to the refresh page), Stripe sends the partner back, the account is read again."""
    response = browser.post("/portal/payouts/stripe")
    assert response.status_code == 302
    onboarding_url = response["Location"]
    assert onboarding_url.startswith(stripe_server.url + "/onboarding/acct_")
    payout_account = PayoutAccount.objects.get(account=partner.account)
    assert payout_account.rail == Rail.STRIPE and payout_account.stripe_account_id
    assert stripe_server.account(payout_account.stripe_account_id)["email"] == "pat@example.com"
    state, _ = setup_state(page_html(browser))
    assert state == "stripe_unfinished"

    expired = requests.get(onboarding_url + "&outcome=refresh", allow_redirects=False, timeout=5)
    assert expired.status_code == 302 and expired.headers["Location"] == REFRESH_URL
    assert browser.get(urlsplit(REFRESH_URL).path).status_code == 200

    finished = requests.get(onboarding_url, allow_redirects=False, timeout=5)
    assert finished.status_code == 302 and finished.headers["Location"] == RETURN_URL
    back = browser.get(urlsplit(RETURN_URL).path)
    assert back.status_code == 302 and back["Location"] == PAGE
    html = page_html(browser)
    assert messages_of(html) == ["Stripe onboarding saved: you are ready to be paid."]
    assert setup_state(html)[0] == "stripe_ready"
    payout_account.refresh_from_db()
    assert payout_account.transfers_active and payout_account.requirements_due == []

    # Asking again reuses the account: one Express account per partner account.
    assert browser.post("/portal/payouts/stripe").status_code == 302
    assert len(stripe_server.accounts) == 1


# --- The manual rail ------------------------------------------------------------------------------------------------


def test_the_manual_rail_form_saves_paypal(browser, partner):
    response = browser.post(
        "/portal/payouts/manual",
        {"rail": "paypal", "payout_email": " Pat.PayPal@Example.com ", "holder_name": "Pat Doe"},
    )
    assert response.status_code == 303 and response["Location"] == PAGE
    payout_account = PayoutAccount.objects.get(account=partner.account)
    assert (payout_account.rail, payout_account.payout_email, payout_account.holder_name) == (
        "paypal",
        "pat.paypal@example.com",
        "Pat Doe",
    )
    assert messages_of(page_html(browser)) == ["Saved: your payouts are sent by PayPal to pat.paypal@example.com."]


def test_the_manual_rail_form_saves_wise_and_replaces_stripe(browser, partner):
    stripe_account(partner, stripe_account_id="acct_1Was", transfers_active=True)
    response = browser.post(
        "/portal/payouts/manual", {"rail": "wise", "bank_reference": "GB33 BUKB 2020 1555 5555 55", "holder_name": "P"}
    )
    assert response.status_code == 303
    payout_account = PayoutAccount.objects.get(account=partner.account)
    assert (payout_account.rail, payout_account.bank_reference) == ("wise", "GB33 BUKB 2020 1555 5555 55")
    assert setup_state(page_html(browser)) == ("manual", "Wise: payouts are sent to GB33 BUKB 2020 1555 5555 55.")


INVALID = [
    (
        {"rail": "paypal", "payout_email": "", "holder_name": "Pat"},
        "PayPal payouts need the email of your PayPal account",
    ),
    ({"rail": "wise"}, "Wise payouts need an email or a bank reference"),
    ({"rail": "paypal", "payout_email": "not an email"}, portal_payouts.EMAIL_INVALID),
    ({"rail": "paypal", "payout_email": "a@" + "b" * 260 + ".com"}, "An email is at most 254 characters long."),
    ({"rail": "wise", "bank_reference": "x" * 256}, "A bank reference is at most 255 characters long."),
    ({"rail": "paypal", "payout_email": "p@example.com", "holder_name": "y" * 201}, "at most 200 characters"),
    ({"rail": "paypal", "payout_email": "p@example.com", "holder_name": "Pat\u0007"}, "control characters"),
    ({"rail": "wise", "bank_reference": "GB33\u200e"}, "control characters"),
    ({"rail": "stripe", "payout_email": "p@example.com"}, portal_payouts.RAIL_REFUSED),
    ({"rail": "bank", "payout_email": "p@example.com"}, portal_payouts.RAIL_REFUSED),
    ({"payout_email": "p@example.com"}, portal_payouts.RAIL_REFUSED),
    ({"rail": ["paypal", "wise"], "payout_email": "p@example.com", "holder_name": "Pat"}, ""),  # last one wins
]


@pytest.mark.parametrize(("form", "error"), INVALID)
def test_an_invalid_manual_rail_form_changes_nothing(browser, partner, form, error):
    paid_by_paypal(partner, "before@example.com")
    before = PayoutAccount.objects.filter(account=partner.account).values().get()
    response = browser.post("/portal/payouts/manual", form)
    if not error:  # a repeated field: Django reads the last value, a valid form
        assert response.status_code == 303
        return
    assert response.status_code == 400
    html = response.content.decode()
    assert error in text(html)
    assert re.search(r'<p class="field-error" role="alert" id="manual-error">', html)
    assert PayoutAccount.objects.filter(account=partner.account).values().get() == before


def test_an_invalid_form_without_a_payout_account_makes_none(browser):
    assert browser.post("/portal/payouts/manual", {"rail": "paypal"}).status_code == 400
    assert not PayoutAccount.objects.exists()


def test_the_manual_rail_form_is_rate_limited(browser, partner):
    for _ in range(20):
        assert browser.post("/portal/payouts/manual", {"rail": "paypal"}).status_code == 400
    response = browser.post("/portal/payouts/manual", {"rail": "paypal", "payout_email": "p@example.com"})
    assert response.status_code == 429
    assert not PayoutAccount.objects.exists()


def test_stripe_onboarding_is_rate_limited(browser, partner, stripe_on, onboarding):
    for _ in range(10):
        assert browser.post("/portal/payouts/stripe").status_code == 302
    assert browser.post("/portal/payouts/stripe").status_code == 429
    assert len(onboarding) == 10


# --- The payouts and their statements ---------------------------------------------------------------------------


def test_a_payout_is_listed_with_the_commissions_it_covered(program, browser, partner):
    paid_by_paypal(partner)
    first = credited_for(partner, program, amount=10_000)
    second = credited_for(partner, program, amount=25_000)
    commission_for(partner, program, amount=99_900)  # pending: not paid, not on the statement
    [payout] = pay(program)
    assert payout.amount_cents == 7_000

    [row] = payout_rows(page_html(browser))
    assert row.date == payout.created_at.astimezone(UTC).strftime("%Y-%m-%d")
    assert (row.program, row.amount, row.rail, row.status) == ("Acme Pro", "70.00 USD", "PayPal", "scheduled")
    assert sorted(row.statement) == sorted(
        [
            (
                commission.sale.sale_date.astimezone(UTC).strftime("%Y-%m-%d"),
                money,
                customer_reference(partner_id=partner.pk, customer_id=commission.customer_id),
            )
            for commission, money in ((first, "20.00 USD"), (second, "50.00 USD"))
        ]
    )
    assert "199.80" not in page_html(browser)
    ledger_exact(partner)


def test_each_status_in_a_partners_words(program, browser, partner):
    paid_by_paypal(partner)
    second = ProgramFactory.create(workspace=program.workspace, name="Beta")
    third = ProgramFactory.create(workspace=program.workspace, name="Gamma")
    fourth = ProgramFactory.create(workspace=program.workspace, name="Delta")
    fifth = ProgramFactory.create(workspace=program.workspace, name="Epsilon")
    for other in (second, third, fourth, fifth):
        PartnerProgramFactory.create(partner=partner, program=other)

    credited_for(partner, program, amount=10_000)
    [paid] = pay(program)
    assert payout_mark_paid(payout_id=paid.pk, actor="user:owner", now=datetime(2031, 5, 17, 23, 30, tzinfo=UTC))

    # Refunded whole before it was sent: the payout is reduced to nothing (the balance is 0 before the failure below
    # puts money back, so the refund takes it all from this payout).
    refunded = credited_for(partner, third, amount=30_000)
    [cancelled] = pay(third)
    refund_apply(sale=refunded.sale, amount=None, refund_id=None, reason="")
    cancelled.refresh_from_db()
    assert cancelled.status == PayoutStatus.CANCELLED

    credited_for(partner, second, amount=20_000)
    [failed] = pay(second)
    assert payout_mark_failed(
        payout_id=failed.pk, code="receiver_ineligible", message="PayPal refused the receiver account"
    )

    credited_for(partner, fourth, amount=40_000)
    [exported] = pay(fourth)
    run_export(run_id=exported.run_id, rail=Rail.PAYPAL, actor="user:owner")

    credited_for(partner, fifth, amount=50_000)
    pay(fifth)

    html = page_html(browser)
    rows = {row.program: row for row in payout_rows(html)}
    assert rows["Acme Pro"].status == "paid on 2031-05-17"
    assert rows["Beta"].status == "failed: PayPal refused the receiver account — back on your balance"
    assert rows["Gamma"].status == "cancelled: refunds took it back before it was sent"
    assert rows["Delta"].status == "on its way"
    assert rows["Epsilon"].status == "scheduled"
    # A failed payout's statement is shown, as back on the balance; a cancelled one covered nothing in the end.
    assert [line[1] for line in rows["Beta"].statement] == ["40.00 USD"]
    assert "1 commission, back on your balance" in html
    assert rows["Gamma"].statement == []
    assert [line[1] for line in rows["Acme Pro"].statement] == ["20.00 USD"]
    assert "receiver_ineligible" not in html
    ledger_exact(partner)


def test_a_failure_without_a_message_still_reads_as_a_sentence(program, browser, partner):
    paid_by_paypal(partner)
    credited_for(partner, program, amount=10_000)
    [payout] = pay(program)
    payout_mark_failed(payout_id=payout.pk, code="internal_code_17", message="")
    [row] = payout_rows(page_html(browser))
    assert row.status == "failed: the payment could not be made — back on your balance"


def test_payouts_are_newest_first_by_cursor(program, browser, partner):
    paid_by_paypal(partner)
    made = [paid_out(partner, program, [amount * 100]) for amount in range(1, 23)]
    # Twenty-two payouts made at distinct moments, newest last.
    for index, payout in enumerate(made):
        Payout.objects.filter(pk=payout.pk).update(created_at=timezone.now() - timedelta(hours=100 - index))
    html = page_html(browser)
    first = payout_rows(html)
    assert [row.amount for row in first] == [f"{amount * 20 / 100:.2f} USD" for amount in range(22, 2, -1)]
    older = re.search(r'href="\?before=([^"]+)" rel="next"', html)
    assert older is not None and 'rel="prev"' not in html
    second_html = page_html(browser, f"?before={older[1]}")
    assert [row.amount for row in payout_rows(second_html)] == ["0.40 USD", "0.20 USD"]
    newer = re.search(r'href="\?after=([^"]+)" rel="prev"', second_html)
    assert newer is not None and 'rel="next"' not in second_html
    assert len(payout_rows(page_html(browser, f"?after={newer[1]}"))) == 20


JUNK = ("abc", "0", "-1", "1e3", "9" * 30, " 1", "１", "%", "[]", "", "1.0", "1.-1", "1." + "9" * 30, "1.1.1")


@pytest.mark.parametrize("param", ["before", "after"])
def test_junk_cursors_read_the_newest_page(program, browser, partner, param):
    paid_by_paypal(partner)
    paid_out(partner, program, [10_000])
    for value in JUNK:
        response = browser.get(PAGE, {param: value})
        assert response.status_code == 200, value
        assert [row.amount for row in payout_rows(response.content.decode())] == ["20.00 USD"], value
    assert browser.get(PAGE, {param: "1\x00"}).status_code == 400  # core.middleware refuses a NUL


# --- Isolation: partner A never sees partner B's payouts, by any id ------------------------------------------------


@dataclass(frozen=True)
class Rivals:
    rival: Partner
    rival_browser: Client
    rival_customer: str
    stranger_browser: Client
    payouts: list[Payout]


@pytest.fixture
def rivals(program, partner) -> Rivals:
    """Partner B in the same program and in another program of the workspace, and partner C of another workspace,
    each paid by a payout with amounts, customers and destinations of their own (B's partner row carries an owner's
    note). Partner A (`browser`) has one payout."""
    paid_by_paypal(partner)
    credited_for(partner, program, amount=10_000)
    mine = pay(program)

    rival_browser = joined(invite(program, email="rival@example.com", name="Rival"))
    rival = partner_of(program, "rival@example.com")
    rival.notes = "OWNER NOTE: pays late"
    rival.save()
    paid_by_paypal(rival, "rival-paypal@example.com")
    rival_commission = credited_for(rival, program, amount=777_700)
    same_program = [payout for payout in pay(program) if payout.partner_id == rival.pk]
    assert mine and same_program

    other_program = ProgramFactory.create(workspace=program.workspace, name="Secret Program")
    PartnerProgramFactory.create(partner=rival, program=other_program)
    credited_for(rival, other_program, amount=555_500)
    [in_other_program] = pay(other_program)

    elsewhere = ProgramFactory.create(name="Elsewhere Ltd")
    stranger_browser = joined(invite(elsewhere, email="stranger@example.com", name="Stranger"))
    stranger = partner_of(elsewhere, "stranger@example.com")
    paid_by_paypal(stranger, "stranger-paypal@example.com")
    credited_for(stranger, elsewhere, amount=888_800)
    [in_other_workspace] = pay(elsewhere)
    payout_mark_failed(payout_id=in_other_workspace.pk, code="account_closed", message="Stranger's account closed")
    return Rivals(
        rival=rival,
        rival_browser=rival_browser,
        rival_customer=customer_reference(partner_id=rival.pk, customer_id=rival_commission.customer_id),
        stranger_browser=stranger_browser,
        payouts=[*same_program, in_other_program, in_other_workspace],
    )


FOREIGN = (
    "1,555.40",
    "1,111.00",
    "1,777.60",
    "rival",
    "Rival",
    "stranger",
    "Stranger",
    "Secret Program",
    "Elsewhere Ltd",
    "OWNER NOTE",
    "account_closed",
)


def assert_nothing_foreign(html: str, rivals: Rivals) -> None:
    for foreign in (*FOREIGN, rivals.rival_customer):
        assert foreign not in html, foreign


def test_a_partner_sees_only_their_own_payouts(browser, rivals):
    html = page_html(browser)
    assert [row.amount for row in payout_rows(html)] == ["20.00 USD"]
    assert_nothing_foreign(html, rivals)
    # And the others see theirs only.
    rival_html = page_html(rivals.rival_browser)
    assert sorted(row.amount for row in payout_rows(rival_html)) == ["1,111.00 USD", "1,555.40 USD"]
    assert "pat-paypal@example.com" not in rival_html and "OWNER NOTE" not in rival_html
    stranger_html = page_html(rivals.stranger_browser)
    assert [row.status for row in payout_rows(stranger_html)] == [
        "failed: Stranger's account closed — back on your balance"
    ]
    assert "20.00 USD" not in stranger_html and "1,555.40" not in stranger_html


def test_another_partners_ids_in_any_url_or_form_show_nothing_of_theirs(
    browser, partner, rivals, stripe_on, onboarding
):
    rival = rivals.rival
    for payout in rivals.payouts:
        for query in (
            {"before": cursor_of(payout)},
            {"after": cursor_of(payout)},
            {"payout": payout.pk},
            {"id": payout.pk},
            {"partner": rival.pk},
            {"account": rival.account_id},
            {"run": payout.run_id},
        ):
            response = browser.get(PAGE, query)
            assert response.status_code == 200, query
            assert_nothing_foreign(response.content.decode(), rivals)
    # Forms name no partner or account: any sent are ignored, and only the signed-in account changes.
    rival_before = PayoutAccount.objects.filter(account=rival.account).values().get()
    response = browser.post(
        "/portal/payouts/manual",
        {
            "rail": "paypal",
            "payout_email": "mine@example.com",
            "account": rival.account_id,
            "partner": rival.pk,
            "account_id": rival.account_id,
        },
    )
    assert response.status_code == 303
    assert PayoutAccount.objects.get(account=partner.account).payout_email == "mine@example.com"
    assert PayoutAccount.objects.filter(account=rival.account).values().get() == rival_before
    browser.post("/portal/payouts/stripe", {"account": rival.account_id})
    assert [call["account"] for call in onboarding] == [partner.account]


def test_a_partner_of_two_workspaces_sees_both_and_nothing_else(program, browser, partner, rivals):
    elsewhere = ProgramFactory.create(name="Second Home")
    invited = invite(elsewhere)  # the same email: the same portal account joins a second workspace
    assert Client().post(invited, {"password": "long enough passphrase 1"}).status_code == 302
    second_partner = partner_of(elsewhere)
    assert second_partner.account_id == partner.account_id
    credited_for(second_partner, elsewhere, amount=123_400)
    pay(elsewhere)
    html = page_html(browser)
    assert sorted(row.program for row in payout_rows(html)) == ["Acme Pro", "Second Home"]
    assert_nothing_foreign(html, rivals)


def test_the_return_reads_only_the_signed_in_accounts_stripe_account(browser, partner, rivals, stripe_on, monkeypatch):
    rival = rivals.rival
    PayoutAccount.objects.filter(account=rival.account).update(rail=Rail.STRIPE, stripe_account_id="acct_1Rival")
    stripe_account_of_pat = PayoutAccount.objects.get(account=partner.account)
    PayoutAccount.objects.filter(pk=stripe_account_of_pat.pk).update(rail=Rail.STRIPE, stripe_account_id="acct_1Pat")
    read: list[str] = []

    def refresh(payout_account: PayoutAccount) -> PayoutAccount:
        read.append(payout_account.stripe_account_id)
        return payout_account

    monkeypatch.setattr(stripe_rail, "account_refresh", refresh)
    browser.get("/portal/payouts/stripe/return", {"account": rival.account_id, "stripe_account": "acct_1Rival"})
    assert read == ["acct_1Pat"]


# --- Access ---------------------------------------------------------------------------------------------------------


def owner_browser(program: Program) -> Client:
    client = Client()
    client.force_login(MembershipFactory.create(workspace=program.workspace).user)
    return client


@pytest.mark.parametrize("path", GETS)
def test_signed_out_visitors_and_owners_go_to_the_sign_in_page(program, partner, path, stripe_on, onboarding):
    stripe_account(partner, stripe_account_id="acct_1Pat")
    for visitor in (Client(), owner_browser(program)):
        response = visitor.get(path)
        assert response.status_code == 302
        assert response["Location"] == "/portal/sign-in?next=" + path.replace("/", "%2F")


@pytest.mark.parametrize("path", POSTS)
def test_signed_out_and_owners_posts_change_nothing(program, partner, path, stripe_on, onboarding):
    for visitor in (Client(), owner_browser(program)):
        response = visitor.post(path, {"rail": "paypal", "payout_email": "evil@example.com"})
        assert response.status_code == 302 and response["Location"].startswith("/portal/sign-in?next=")
    assert onboarding == [] and not PayoutAccount.objects.exists()


def test_the_forms_need_their_csrf_token(browser, partner, stripe_on, onboarding):
    guarded = Client(enforce_csrf_checks=True)
    guarded.cookies = browser.cookies
    html = page_html(guarded)
    form = {"rail": "paypal", "payout_email": "pat@example.com"}
    assert guarded.post("/portal/payouts/manual", form).status_code == 403
    assert guarded.post("/portal/payouts/stripe").status_code == 403
    assert onboarding == [] and not PayoutAccount.objects.exists()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token is not None
    assert guarded.post("/portal/payouts/manual", {**form, "csrfmiddlewaretoken": token[1]}).status_code == 303
    assert guarded.post("/portal/payouts/stripe", {"csrfmiddlewaretoken": token[1]}).status_code == 302
    assert len(onboarding) == 1


def test_the_navigation_links_the_payouts_page(browser):
    html = browser.get("/portal/").content.decode()
    assert '<a href="/portal/payouts">Payouts</a>' in html


# --- Queries do not grow with rows --------------------------------------------------------------------------------


def test_the_payouts_page_queries_do_not_grow_with_rows(program, browser, partner, django_assert_num_queries):
    paid_by_paypal(partner)
    paid_out(partner, program, [10_000])
    # Session and account, the payout account, the account's partner ids, the page's payouts, what refunds took back
    # after they were paid (payouts.selectors.clawbacks_after_sending), their statements.
    with django_assert_num_queries(7):
        assert len(payout_rows(page_html(browser))) == 1
    for amount in range(2, 26):
        paid_out(partner, program, [amount * 100, amount * 100 + 1, amount * 100 + 2])
    with django_assert_num_queries(7):
        rows = payout_rows(page_html(browser))
    assert len(rows) == 20 and all(len(row.statement) == 3 for row in rows)
    # A page from a cursor also probes whether there is a newer page.
    cursor = cursor_of(Payout.objects.filter(partner=partner).order_by("-created_at", "-pk")[0])
    with django_assert_num_queries(8):
        assert len(payout_rows(page_html(browser, f"?before={cursor}"))) == 20
    assert Commission.objects.filter(partner=partner, status="paid").count() == 73
    ledger_exact(partner)
    assert PartnerAccount.objects.count() == 1
