"""portal.selectors, every portal page's reads: an account is given the rows of its own partner rows (in each
workspace it joined) and nothing of another partner's, of the same program or workspace or of another; an inactive
account is given nothing, and a signed-out or deactivated one opens no page. Each page's own isolation (the ids a
partner may send it) is tested with the page (tests/portal/test_*.py)."""

from dataclasses import dataclass

import pytest
from django.core.cache import caches
from django.test import Client

from commissions.models import Commission, Withdrawal
from payouts.models import Payout, PayoutAccount, PayoutRun, PayoutStatus, Rail
from portal import selectors, services
from portal.session import COOKIE_PATH
from programs.models import Partner, PartnerAccount, PartnerProgram, Program, ReferralLink
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    PartnerFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
    WorkspaceFactory,
)

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
# The pages that show an account's rows.
PAGES = ["/portal/", *(f"/portal/{page}" for page in ("links", "performance", "commissions", "balance", "payouts"))]


@pytest.fixture(autouse=True)
def counts_cleared(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()  # the sign-ins below count towards the client's limit


@dataclass
class Rows:
    """One partner row's rows in one program."""

    partner: Partner
    enrolment: PartnerProgram
    link: ReferralLink
    commission: Commission
    withdrawal: Withdrawal
    payout: Payout


def rows_of(partner: Partner, program: Program) -> Rows:
    link = ReferralLinkFactory.create(program=program, partner=partner)
    commission = CommissionFactory.create(sale=SaleFactory(customer=CustomerFactory(link=link)))
    run = PayoutRun.objects.create(workspace=program.workspace, program=program, currency="USD")
    payout = Payout.objects.create(
        run=run,
        program=program,
        partner=partner,
        amount_cents=100,
        currency="USD",
        status=PayoutStatus.PAID,
        rail=Rail.PAYPAL,
        destination="paid@example.com",
    )
    withdrawal = Withdrawal.objects.create(partner=partner, amount_cents=100, requested_cents=100)
    enrolment = PartnerProgram.objects.get(partner=partner, program=program)
    return Rows(partner, enrolment, link, commission, withdrawal, payout)


def account(email: str) -> PartnerAccount:
    made = services.account_create(email, PASSWORD)
    PayoutAccount.objects.create(account=made, rail=Rail.PAYPAL, payout_email=email)
    return made


@pytest.fixture
def world():
    """Alice is a partner of two workspaces, the first also by a second partner row; Bob is another partner of
    Alice's first program; Carol is a partner of a third workspace; and a partner with no account has rows too."""
    first, second = WorkspaceFactory(name="A first"), WorkspaceFactory(name="B second")
    acme = ProgramFactory(workspace=first, name="Acme", partner_codes_allowed=True)
    bolt = ProgramFactory(workspace=second, name="Bolt")
    alice, bob, carol = account("alice@example.com"), account("bob@example.com"), account("carol@example.com")
    alice_rows = [
        rows_of(PartnerFactory(workspace=first, account=alice), acme),
        rows_of(PartnerFactory(workspace=second, account=alice), bolt),
        rows_of(PartnerFactory(workspace=first, account=alice), acme),
    ]
    bob_rows = [rows_of(PartnerFactory(workspace=first, account=bob), acme)]
    carol_program = ProgramFactory(name="Carol's", partner_codes_allowed=True)
    carol_rows = [rows_of(PartnerFactory(workspace=carol_program.workspace, account=carol), carol_program)]
    rows_of(PartnerFactory(workspace=first), acme)  # a partner nobody signs in as
    return {"alice": (alice, alice_rows), "bob": (bob, bob_rows), "carol": (carol, carol_rows), "acme": acme}


def pks(rows) -> set[int]:
    return {row.pk for row in rows}


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_an_account_is_given_its_own_partner_rows_rows_only(world, who):
    found, own = world[who]
    assert pks(selectors.account_partners(found)) == {rows.partner.pk for rows in own}
    assert set(selectors.account_partner_ids(found)) == {rows.partner.pk for rows in own}
    assert pks(selectors.account_enrolments(found)) == {rows.enrolment.pk for rows in own}
    assert pks(selectors.account_links(found)) == {rows.link.pk for rows in own}
    assert pks(selectors.account_commissions(found)) == {rows.commission.pk for rows in own}
    assert pks(selectors.account_payouts(found)) == {rows.payout.pk for rows in own}
    assert pks(selectors.account_withdrawals(found)) == {rows.withdrawal.pk for rows in own}
    payout_account = selectors.account_payout_account(found)
    assert payout_account is not None and payout_account.account_id == found.pk


def test_the_ids_asked_for_are_looked_up_among_the_accounts_own(world):
    alice, alice_rows = world["alice"]
    _, bob_rows = world["bob"]
    _, carol_rows = world["carol"]
    asked = [rows.link.pk for rows in [*alice_rows, *bob_rows, *carol_rows]]
    assert set(selectors.account_links_by_id(alice, asked)) == {rows.link.pk for rows in alice_rows}
    assert selectors.account_links_by_id(alice, [bob_rows[0].link.pk, carol_rows[0].link.pk]) == {}
    # The program lets partners choose codes: Alice's oldest enrolment in it, never Bob's; Carol's program is not hers.
    chosen = selectors.account_enrolment_choosing_codes(alice, world["acme"].pk)
    assert chosen is not None and chosen.pk == alice_rows[0].enrolment.pk
    assert selectors.account_enrolment_choosing_codes(alice, carol_rows[0].enrolment.program_id) is None
    assert selectors.account_enrolment_choosing_codes(alice, alice_rows[1].enrolment.program_id) is None  # not allowed


def test_the_enrolments_come_in_the_portals_one_order(world):
    alice, alice_rows = world["alice"]
    names = [(e.program.name, e.partner_id) for e in selectors.account_enrolments(alice)]
    assert names == [
        ("Acme", alice_rows[0].partner.pk),
        ("Acme", alice_rows[2].partner.pk),
        ("Bolt", alice_rows[1].partner.pk),
    ]


def test_an_inactive_account_is_given_nothing_without_a_query(world, django_assert_num_queries):
    alice, alice_rows = world["alice"]
    PartnerAccount.objects.filter(pk=alice.pk).update(is_active=False)
    alice.refresh_from_db()
    with django_assert_num_queries(0):
        assert selectors.account_partners(alice) == [] and selectors.account_partner_ids(alice) == []
        for rows in (
            selectors.account_enrolments(alice),
            selectors.account_links(alice),
            selectors.account_commissions(alice),
            selectors.account_payouts(alice),
            selectors.account_withdrawals(alice),
        ):
            assert list(rows) == []
        assert selectors.account_links_by_id(alice, [alice_rows[0].link.pk]) == {}
        assert selectors.account_enrolment_choosing_codes(alice, world["acme"].pk) is None
        assert selectors.account_payout_account(alice) is None


@pytest.mark.parametrize("path", PAGES)
def test_a_signed_out_or_deactivated_account_opens_no_page(world, path):
    browser = Client()
    expected = f"/portal/sign-in?next={path.replace('/', '%2F')}"
    signed_out = browser.get(path)
    assert signed_out.status_code == 302 and signed_out["Location"] == expected
    signing_in = browser.post("/portal/sign-in", {"email": "alice@example.com", "password": PASSWORD})
    assert signing_in.status_code == 302 and signing_in["Location"] == COOKIE_PATH
    assert browser.get(path).status_code == 200
    PartnerAccount.objects.filter(email="alice@example.com").update(is_active=False)
    deactivated = browser.get(path)
    assert deactivated.status_code == 302 and deactivated["Location"] == expected
    assert b"@" not in deactivated.content
