"""The portal's Commissions and Balance pages (/portal/commissions, /portal/balance): a partner's own commissions in
words a partner understands, and their balance per currency with the withdrawals history. Partners are untrusted:
every page is tried signed out, as another partner, with another workspace's program, and with junk parameters; a
customer is never shown by email, key or click id, and a fraud rule's name, reason and flags never appear."""

import re
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.models import Commission, LedgerEntry, Withdrawal
from commissions.services import (
    commission_hold,
    commission_void,
    partner_balance,
    refund_apply,
    withdrawal_mark_paid,
    withdrawal_request,
)
from core.pagination import cursor_of, keyset_page
from portal.commissions import customer_reference
from portal.session import COOKIE_PATH
from programs.models import Partner, Program
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    PartnerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
)
from tracking.models import SaleEvent

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
LINK = re.compile(r"/portal/invitations/[A-Za-z0-9_-]+")
PAGES = ("/portal/commissions", "/portal/balance")


# --- Partners as they really join: an owner's invitation, then the link (as tests/portal/test_portal.py does) ---


def invite(program: Program, email: str = "pat@example.com", name: str = "Pat") -> str:
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    mail.outbox.clear()
    response = owner.post(f"/programs/{program.pk}/partners/invite", {"name": name, "email": email})
    assert response.status_code == 302
    [message] = mail.outbox
    found = LINK.search(str(message.body))
    assert found is not None
    return found.group(0)


def joined(link: str) -> Client:
    browser = Client()
    response = browser.post(link, {"password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == COOKIE_PATH
    return browser


def accept(link: str) -> None:
    """An account that already exists accepts another program's invitation with its password."""
    response = Client().post(link, {"password": PASSWORD})
    assert response.status_code == 302


def partner_of(program: Program, email: str = "pat@example.com") -> Partner:
    return Partner.objects.get(workspace=program.workspace, account__email=email)


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", hold_days=30)


@pytest.fixture
def browser(program):
    return joined(invite(program))


@pytest.fixture
def partner(program, browser):
    return partner_of(program)


def sale_for(partner: Partner, program: Program, *, amount: int = 10_000, currency: str = "USD", **customer):
    link = ReferralLinkFactory(program=program, partner=partner)
    return SaleFactory(customer=CustomerFactory(link=link, **customer), amount_cents=amount, currency=currency)


def commission_for(partner: Partner, program: Program, *, amount: int = 10_000, currency: str = "USD", **fields):
    """A pending commission of 20% on a sale the partner referred."""
    sale = sale_for(partner, program, amount=amount, currency=currency)
    fields.setdefault("hold_until", timezone.now() + timedelta(days=30))
    return CommissionFactory(sale=sale, amount_cents=amount // 5, **fields)


def credited_for(partner: Partner, program: Program, *, amount: int = 10_000, currency: str = "USD") -> Commission:
    """A commission approved through the service: its credit is in the partner's ledger."""
    made = commission_for(partner, program, amount=amount, currency=currency, hold_until=timezone.now())
    assert commission_approve(commission_id=made.pk)
    made.refresh_from_db()
    return made


def table_rows(html: str) -> list[list[str]]:
    """The body rows of the page's tables, each as its cells' text."""
    body = "".join(re.findall(r"<tbody>(.*?)</tbody>", html, re.S))
    return [
        [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def commission_rows(browser: Client, query: str = "") -> dict[str, list[str]]:
    """The commissions page's rows by sale amount (the tests give each sale its own)."""
    response = browser.get("/portal/commissions" + query)
    assert response.status_code == 200
    return {row[3]: row for row in table_rows(response.content.decode())}


# Columns: program, sale date, customer, sale, commission, status, sale refunded, refund took back.
STATUS, REFUNDED, TAKEN_BACK = 5, 6, 7


# --- Commissions: each status in words ----------------------------------------------------------------------------


def test_each_status_in_a_partners_words(program, browser, partner):
    due = datetime(2031, 5, 17, 23, 30, tzinfo=UTC)
    commission_for(partner, program, amount=10_000, hold_until=due)
    # A payout pays the oldest approved commissions first: the one it covers is credited before the other.
    paid = credited_for(partner, program, amount=30_000)
    withdrawal_mark_paid(withdrawal=withdrawal_request(partner=partner, amount_cents=paid.amount_cents, currency="USD"))
    credited_for(partner, program, amount=20_000)
    partly = credited_for(partner, program, amount=40_000)
    refund_apply(sale=partly.sale, amount=10_000, refund_id="re_partly", reason="")
    whole = credited_for(partner, program, amount=50_000)
    refund_apply(sale=whole.sale, amount=None, refund_id=None, reason="")
    in_hold = commission_for(partner, program, amount=60_000)
    refund_apply(sale=in_hold.sale, amount=10_000, refund_id="re_hold", reason="")
    voided = credited_for(partner, program, amount=70_000)
    commission_void(commission_id=voided.pk, reason="", actor="user:owner")

    rows = commission_rows(browser)
    assert rows["100.00 USD"][STATUS] == "pending until 2031-05-17"
    assert rows["200.00 USD"][STATUS] == "approved"
    assert Commission.objects.get(pk=paid.pk).status == "paid"
    assert rows["300.00 USD"][STATUS] == "paid"
    # 100.00 of a 400.00 sale refunded: a quarter of the 80.00 commission is taken back.
    assert rows["400.00 USD"][STATUS] == "partly refunded: still pays 60.00 USD"
    assert rows["400.00 USD"][REFUNDED:] == ["100.00 USD", "20.00 USD"]
    assert rows["500.00 USD"][STATUS] == "reversed"
    assert rows["500.00 USD"][TAKEN_BACK] == "100.00 USD"
    # A refund during the hold cancels the commission whole; it was never credited, so nothing was taken back.
    assert rows["600.00 USD"][STATUS] == "partly refunded: still pays 0.00 USD"
    assert rows["600.00 USD"][REFUNDED:] == ["100.00 USD", "–"]
    assert rows["700.00 USD"][STATUS] == "reversed"
    assert rows["700.00 USD"][TAKEN_BACK] == "140.00 USD"
    assert rows["700.00 USD"][4] == "140.00 USD" and rows["700.00 USD"][0] == "Acme Pro"


def test_the_sale_date_is_the_sales_in_utc_and_rows_are_newest_first(program, browser, partner):
    older = commission_for(partner, program, amount=10_000)
    newer = commission_for(partner, program, amount=20_000)
    SaleEvent.objects.filter(pk=older.sale_id).update(sale_date=datetime(2026, 3, 1, 23, 59, tzinfo=UTC))
    Commission.objects.filter(pk=older.pk).update(created_at=newer.created_at - timedelta(hours=1))
    rows = table_rows(browser.get("/portal/commissions").content.decode())
    assert [row[3] for row in rows] == ["200.00 USD", "100.00 USD"]
    assert rows[1][1] == "2026-03-01"


def test_a_commission_held_by_a_rule_is_under_review_and_nothing_of_the_rule_shows(program, browser, partner):
    commission_for(
        partner,
        program,
        amount=10_000,
        held_at=timezone.now(),
        hold_rule="visitor_velocity",
        hold_reason="Velocity: 7 customers from one visitor in 60 minutes",
        flags=["visitor_velocity", "paid_ads"],
    )
    by_owner = commission_for(partner, program, amount=20_000)
    commission_hold(commission_id=by_owner.pk, reason="Looks like coupon abuse", actor="user:owner")
    response = browser.get("/portal/commissions")
    html = response.content.decode()
    rows = {row[3]: row for row in table_rows(html)}
    assert rows["100.00 USD"][STATUS] == "under review"
    assert rows["200.00 USD"][STATUS] == "under review"
    for secret in ("visitor_velocity", "paid_ads", "Velocity", "7 customers", "coupon abuse", "user:owner", "flag"):
        assert secret.lower() not in html.lower()


def test_customers_are_shown_by_a_reference_only(program, browser, partner):
    sale = sale_for(
        partner,
        program,
        amount=10_000,
        email="carol.customer@example.org",
        customer_key="cus_KEY_8812",
        click_id="clk_abcdef123456",
    )
    commission = CommissionFactory(sale=sale, amount_cents=2_000, hold_until=timezone.now() + timedelta(days=3))
    repeat = SaleFactory(customer=sale.customer, amount_cents=20_000)
    CommissionFactory(sale=repeat, amount_cents=4_000, hold_until=timezone.now() + timedelta(days=3))
    html = browser.get("/portal/commissions").content.decode()
    for identifying in ("carol.customer", "example.org", "cus_KEY_8812", "KEY_8812", "clk_abcdef123456", "123456"):
        assert identifying not in html
    reference = customer_reference(partner_id=partner.pk, customer_id=commission.customer_id)
    assert re.fullmatch(r"customer #[0-9a-f]{8}", reference)
    rows = {row[3]: row for row in table_rows(html)}
    # Stable: both sales of the customer carry the same reference.
    assert rows["100.00 USD"][2] == rows["200.00 USD"][2] == reference
    # Per partner: another partner's reference to the same customer differs.
    assert customer_reference(partner_id=partner.pk + 1, customer_id=commission.customer_id) != reference


# --- Balance ------------------------------------------------------------------------------------------------------


def stats(html: str) -> list[dict[str, str]]:
    """Each <dl class="stats"> of the page as label -> value."""
    return [
        {unescape(label): unescape(value) for label, value in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", block)}
        for block in re.findall(r'<dl class="stats">(.*?)</dl>', html, re.S)
    ]


def ledger_sum(partner: Partner, currency: str, kind: str) -> int:
    return sum(
        LedgerEntry.objects.filter(partner=partner, currency=currency, kind=kind).values_list("amount_cents", flat=True)
    )


def test_the_balance_per_currency_equals_the_ledger(program, browser, partner):
    first = credited_for(partner, program, amount=100_000)  # 200.00 USD
    credited_for(partner, program, amount=50_000)  # 100.00 USD
    refund_apply(sale=first.sale, amount=25_000, refund_id="re_1", reason="")  # takes back 50.00 USD
    withdrawal_mark_paid(withdrawal=withdrawal_request(partner=partner, amount_cents=10_000, currency="USD"))
    withdrawal_request(partner=partner, amount_cents=7_550, currency="USD")
    credited_for(partner, program, amount=1_000_000, currency="VND")  # 200,000 VND
    withdrawal_request(partner=partner, amount_cents=150_000, currency="VND")

    response = browser.get("/portal/balance")
    assert response.status_code == 200
    usd, vnd = stats(response.content.decode())
    assert ledger_sum(partner, "USD", LedgerEntry.Kind.CREDIT) == 30_000
    assert ledger_sum(partner, "USD", LedgerEntry.Kind.DEDUCTION) == -5_000
    assert partner_balance(partner_id=partner.pk, currency="USD") == 15_000
    assert usd == {
        "Credited": "300.00 USD",
        "Clawed back": "50.00 USD",
        "Paid out": "100.00 USD",
        "Balance": "150.00 USD",
        "Open withdrawals": "75.50 USD",
        "Available": "74.50 USD",
    }
    assert partner_balance(partner_id=partner.pk, currency="VND") == 200_000
    assert vnd == {
        "Credited": "200,000 VND",
        "Clawed back": "0 VND",
        "Paid out": "0 VND",
        "Balance": "200,000 VND",
        "Open withdrawals": "150,000 VND",
        "Available": "50,000 VND",
    }


def test_a_negative_balance_is_stated_plainly_and_nothing_is_available(program, browser, partner):
    commission = credited_for(partner, program, amount=10_000)
    withdrawal_mark_paid(withdrawal=withdrawal_request(partner=partner, amount_cents=2_000, currency="USD"))
    refund_apply(sale=commission.sale, amount=None, refund_id=None, reason="")
    assert partner_balance(partner_id=partner.pk, currency="USD") == -2_000
    html = browser.get("/portal/balance").content.decode()
    [usd] = stats(html)
    assert usd["Balance"] == "-20.00 USD" and usd["Available"] == "0.00 USD" and usd["Clawed back"] == "20.00 USD"
    assert "Your USD balance is negative: -20.00 USD." in " ".join(html.split())


def test_a_manual_adjustment_shows_and_counts_in_the_balance(program, browser, partner):
    credited_for(partner, program, amount=10_000)
    LedgerEntry.objects.create(partner=partner, kind=LedgerEntry.Kind.ADJUSTMENT, amount_cents=-550, currency="USD")
    [usd] = stats(browser.get("/portal/balance").content.decode())
    assert partner_balance(partner_id=partner.pk, currency="USD") == 1_450
    assert (usd["Adjustments"], usd["Balance"], usd["Available"]) == ("-5.50 USD", "14.50 USD", "14.50 USD")


def test_withdrawals_are_listed_newest_first(program, browser, partner):
    credited_for(partner, program, amount=100_000)  # 200.00 USD
    paid = withdrawal_request(partner=partner, amount_cents=5_000, currency="USD")
    withdrawal_mark_paid(withdrawal=paid)
    cancelled = withdrawal_request(partner=partner, amount_cents=1_000, currency="USD")
    cancelled.status = Withdrawal.Status.CANCELLED
    cancelled.save()
    reduced = withdrawal_request(partner=partner, amount_cents=9_000, currency="USD")
    Withdrawal.objects.filter(pk=reduced.pk).update(amount_cents=6_000)
    start = timezone.now() - timedelta(days=3)
    for offset, withdrawal in enumerate((paid, cancelled, reduced)):
        Withdrawal.objects.filter(pk=withdrawal.pk).update(created_at=start + timedelta(days=offset))
    rows = table_rows(browser.get("/portal/balance").content.decode())
    assert [row[1:] for row in rows] == [
        ["60.00 USD", "90.00 USD", "open: not paid yet"],
        ["10.00 USD", "10.00 USD", "cancelled"],
        ["50.00 USD", "50.00 USD", "paid"],
    ]
    assert rows[2][0] == (start.astimezone(UTC)).strftime("%Y-%m-%d %H:%M")


# --- Isolation ----------------------------------------------------------------------------------------------------


def test_another_partners_commissions_and_withdrawals_never_appear(program, browser, partner):
    credited_for(partner, program, amount=10_000)
    other_browser = joined(invite(program, email="rival@example.com", name="Rival"))
    rival = partner_of(program, "rival@example.com")
    credited_for(rival, program, amount=777_700)
    withdrawal_request(partner=rival, amount_cents=3_333, currency="USD")
    elsewhere = ProgramFactory(name="Elsewhere Ltd")
    stranger = Partner.objects.create(workspace=elsewhere.workspace, name="Stranger", email="pat@example.com")
    credited_for(stranger, elsewhere, amount=888_800)
    withdrawal_request(partner=stranger, amount_cents=4_444, currency="USD")

    commissions = browser.get("/portal/commissions").content.decode()
    balance = browser.get("/portal/balance").content.decode()
    assert "100.00 USD" in commissions
    for foreign in ("7,777.00", "1,555.40", "8,888.00", "1,777.60", "Elsewhere Ltd"):
        assert foreign not in commissions and foreign not in balance
    for foreign in ("33.33", "44.44"):
        assert foreign not in balance
    assert stats(balance) == [
        {
            "Credited": "20.00 USD",
            "Clawed back": "0.00 USD",
            "Paid out": "0.00 USD",
            "Balance": "20.00 USD",
            "Open withdrawals": "0.00 USD",
            "Available": "20.00 USD",
        }
    ]
    assert "7,777.00 USD" in other_browser.get("/portal/commissions").content.decode()
    assert "33.33 USD" in other_browser.get("/portal/balance").content.decode()


def test_the_program_filter_takes_only_the_partners_own_programs(program, browser, partner):
    second = ProgramFactory(workspace=program.workspace, name="Acme Lite")
    accept(invite(second))
    commission_for(partner, program, amount=10_000)
    commission_for(partner, second, amount=20_000)
    assert set(commission_rows(browser)) == {"100.00 USD", "200.00 USD"}
    assert set(commission_rows(browser, f"?program={second.pk}")) == {"200.00 USD"}
    assert set(commission_rows(browser, f"?program={program.pk}")) == {"100.00 USD"}

    not_enrolled = ProgramFactory(workspace=program.workspace, name="Acme Secret")
    other_workspace = ProgramFactory(name="Other Co")
    for foreign in (not_enrolled.pk, other_workspace.pk, other_workspace.pk + 1000):
        assert browser.get(f"/portal/commissions?program={foreign}").status_code == 404


def test_a_partner_of_two_workspaces_sees_both_and_nothing_else(program, browser, partner):
    other = ProgramFactory(name="Other Co")
    accept(invite(other))
    there = partner_of(other)
    credited_for(partner, program, amount=10_000)
    credited_for(there, other, amount=1_000_000, currency="VND")
    withdrawal_request(partner=there, amount_cents=50_000, currency="VND")
    third = ProgramFactory(name="Third Co")
    credited_for(Partner.objects.create(workspace=third.workspace, name="Pat"), third, amount=555_500)

    rows = commission_rows(browser)
    assert set(rows) == {"100.00 USD", "1,000,000 VND"}
    assert rows["1,000,000 VND"][0] == "Other Co" and rows["1,000,000 VND"][4] == "200,000 VND"
    assert set(commission_rows(browser, f"?program={other.pk}")) == {"1,000,000 VND"}
    assert browser.get(f"/portal/commissions?program={third.pk}").status_code == 404

    html = browser.get("/portal/balance").content.decode()
    assert [block["Balance"] for block in stats(html)] == ["20.00 USD", "200,000 VND"]
    assert [block["Available"] for block in stats(html)] == ["20.00 USD", "150,000 VND"]
    assert [row[1:] for row in table_rows(html)] == [
        [other.workspace.name, "50,000 VND", "50,000 VND", "open: not paid yet"]
    ]
    assert "1,111.00" not in html and third.workspace.name not in html


# --- Signed out, bad input, methods -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
def test_signed_out_visitors_and_owners_go_to_the_sign_in_page(program, path):
    for visitor in (Client(), owner_browser(program)):
        response = visitor.get(path + "?page=2")
        assert response.status_code == 302
        assert response["Location"] == "/portal/sign-in?next=%2Fportal%2F" + path.rsplit("/", 1)[1] + "%3Fpage%3D2"


def owner_browser(program: Program) -> Client:
    client = Client()
    client.force_login(MembershipFactory.create(workspace=program.workspace).user)
    return client


JUNK = ("abc", "0", "-1", "1.5", "1e3", "9" * 30, " 1", "１", "%", "[]", "")
# core.middleware refuses a NUL in any query parameter (400) before a view reads it.
NUL = ("1\x00", "\x00")


@pytest.mark.parametrize("path", PAGES)
def test_junk_pages_answer_a_page(program, browser, partner, path):
    commission_for(partner, program, amount=10_000)
    for value in JUNK:
        response = browser.get(path, {"page": value})
        assert response.status_code == 200, value
    for value in NUL:
        assert browser.get(path, {"page": value}).status_code == 400


def test_junk_program_ids_are_not_found(program, browser, partner):
    for value in (*JUNK[:-1], str(2**63), "0" + str(program.pk), "+" + str(program.pk)):
        assert browser.get("/portal/commissions", {"program": value}).status_code == 404, value
    for value in NUL:
        assert browser.get("/portal/commissions", {"program": value + str(program.pk)}).status_code == 400
    assert browser.get("/portal/commissions", {"program": ""}).status_code == 200  # the form's "All programs"


@pytest.mark.parametrize("path", PAGES)
def test_the_pages_only_read(browser, path):
    assert browser.post(path).status_code == 405
    assert browser.head(path).status_code == 200


def pager_links(browser: Client, query: str = "") -> dict[str, str]:
    """The commissions page's Newer and Older links by their rel."""
    html = browser.get("/portal/commissions" + query).content.decode()
    links = re.findall(r'<a class="button secondary" href="([^"]*)" rel="(\w+)"', html)
    return {rel: unescape(href) for href, rel in links}


def test_pages_of_fifty_newest_first_by_cursor(program, browser, partner):
    for amount in range(1, 52):
        commission_for(partner, program, amount=amount * 100)
    assert len(commission_rows(browser)) == 50
    first = pager_links(browser)
    assert set(first) == {"next"}  # the newest page: nothing newer
    assert set(commission_rows(browser, first["next"])) == {"1.00 USD"}
    last = pager_links(browser, first["next"])
    assert set(last) == {"prev"}  # the oldest page: nothing older
    back = commission_rows(browser, last["prev"])
    assert len(back) == 50 and "1.00 USD" not in back and "51.00 USD" in back
    assert set(pager_links(browser, last["prev"])) == {"next"}


def test_pages_by_cursor_keep_their_place_with_one_program(program, browser, partner):
    other = ProgramFactory(workspace=program.workspace, name="Other Co")
    PartnerProgramFactory(partner=partner, program=other)
    for amount in range(1, 52):
        commission_for(partner, program, amount=amount * 100)
        commission_for(partner, other, amount=amount * 100 + 1)
    first = pager_links(browser, f"?program={program.pk}")
    assert first["next"].startswith(f"?program={program.pk}&before=")
    assert set(commission_rows(browser, first["next"])) == {"1.00 USD"}


def test_rows_created_at_the_same_moment_are_each_shown_once(program, partner):
    moment = timezone.now()
    made = [commission_for(partner, program, amount=amount * 100) for amount in range(1, 8)]
    Commission.objects.filter(pk__in=[commission.pk for commission in made]).update(created_at=moment)
    rows = Commission.objects.filter(partner=partner)
    seen, page = [], keyset_page(rows, per_page=3)
    while True:
        seen += [commission.pk for commission in page.rows]
        if not page.older:
            break
        page = keyset_page(rows, before=page.older, per_page=3)
    assert seen == sorted((commission.pk for commission in made), reverse=True)
    newer = keyset_page(rows, after=cursor_of(page.rows[0]), per_page=3)
    assert [commission.pk for commission in newer.rows] == seen[-4:-1]


@pytest.mark.parametrize("param", ["before", "after"])
def test_junk_cursors_read_the_newest_page(program, browser, partner, param):
    commission_for(partner, program, amount=100)
    # JUNK's "1.5" is a well-formed cursor (5 at the epoch's first microsecond): nothing is older than it.
    junk = (*(value for value in JUNK if value != "1.5"), "1.0", "1.-1", "1." + "9" * 30, "1.1.1", "9" * 18 + ".1")
    for value in junk:
        response = browser.get("/portal/commissions", {param: value})
        assert response.status_code == 200, value
        assert set(table_rows_of(response)) == {"1.00 USD"}, value


def test_another_partners_cursor_only_places_the_page(program, browser, partner):
    mine = commission_for(partner, program, amount=100)
    stranger = PartnerFactory(workspace=program.workspace)
    theirs = commission_for(stranger, program, amount=999)
    for param in ("before", "after"):
        for commission in (mine, theirs):
            response = browser.get("/portal/commissions", {param: cursor_of(commission)})
            assert response.status_code == 200
            assert "9.99" not in response.content.decode()


def table_rows_of(response) -> dict[str, list[str]]:
    return {row[3]: row for row in table_rows(response.content.decode())}


# --- Queries do not grow with rows --------------------------------------------------------------------------------


def test_the_commissions_page_queries_do_not_grow_with_rows(program, browser, partner, django_assert_num_queries):
    commission_for(partner, program, amount=100)
    # Session and account, enrolments, the account's partner ids, the page's rows, the page's rows with their money.
    with django_assert_num_queries(6):
        assert len(commission_rows(browser)) == 1
    for amount in range(2, 31):
        commission = commission_for(partner, program, amount=amount * 100, held_at=timezone.now())
        assert commission.customer_id is not None
    with django_assert_num_queries(6):
        assert len(commission_rows(browser)) == 30
    with django_assert_num_queries(6):
        assert len(commission_rows(browser, f"?program={program.pk}")) == 30
    # A page from a cursor also probes whether there is a newer page.
    cursor = cursor_of(Commission.objects.filter(partner=partner).order_by("-created_at", "-pk")[0])
    with django_assert_num_queries(7):
        assert len(commission_rows(browser, f"?before={cursor}")) == 29


def test_the_balance_page_queries_do_not_grow_with_rows(program, browser, partner, django_assert_num_queries):
    credited_for(partner, program, amount=1_000_000)
    withdrawal_request(partner=partner, amount_cents=100, currency="USD")
    # Session and account, partners, enrolments, balances, their parts, open withdrawals, the count, the page.
    with django_assert_num_queries(9):
        assert len(table_rows(browser.get("/portal/balance").content.decode())) == 1
    for _ in range(29):
        withdrawal_request(partner=partner, amount_cents=100, currency="USD")
    with django_assert_num_queries(9):
        assert len(table_rows(browser.get("/portal/balance").content.decode())) == 30
