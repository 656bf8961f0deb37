"""The portal's program cards (/portal/): a partner sees their group in each program, its terms in plain words, the
discount their audience gets, their own active coupon codes with copy buttons, and their progress to the group's
tier promotions and bonuses. Partners are untrusted: another partner's codes and group, another workspace's, and a
signed-out visitor are tried."""

import html
from datetime import timedelta
from decimal import Decimal

import pytest
from django.http import HttpResponse
from django.test import Client
from django.utils import timezone

from groups.models import Bonus, BonusAward, CouponCode, PartnerGroup, TierRule
from groups.periods import period_key
from groups.terms import GroupTerms
from portal import services, session
from portal.terms import discount_words, terms_words
from programs.models import Partner, PartnerAccount, PartnerProgram, Program
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
)

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"


def signed_in(partner: Partner) -> Client:
    """A browser signed in to the portal as the partner's account (made for it when it has none)."""
    if partner.account is None:
        partner.account = services.account_create(partner.email, PASSWORD)
        partner.save(update_fields=["account"])
    response = HttpResponse()
    session.sign_in(response, partner.account)
    client = Client()
    client.cookies[session.COOKIE] = response.cookies[session.COOKIE].value
    return client


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def vip_group(program: Program, **fields) -> PartnerGroup:
    values = {
        "name": "VIP",
        "slug": "vip",
        "commission_type": "recurring_percent",
        "commission_rate": Decimal("30"),
        "duration_months": 12,
        "hold_days": 30,
        "discount_type": "percent",
        "discount_percent": Decimal("10"),
        "discount_duration": "once",
        **fields,
    }
    return PartnerGroup.objects.create(program=program, **values)


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", commission_type="percent", commission_rate=Decimal("20"), hold_days=14)


@pytest.fixture
def vip(program):
    return vip_group(program)


@pytest.fixture
def jane(program, vip):
    enrolment = PartnerProgramFactory(program=program, partner__name="Jane", group=vip)
    return enrolment.partner


@pytest.fixture
def bob(program):
    """Another partner of the same program, in the default group."""
    return PartnerProgramFactory(program=program, partner__name="Bob").partner


def sales(program, partner, count, *, amount_cents=10000, when=None):
    link = ReferralLinkFactory(program=program, partner=partner)
    for _ in range(count):
        sale = SaleFactory(customer=CustomerFactory(link=link), amount_cents=amount_cents)
        if when is not None:
            type(sale).objects.filter(pk=sale.pk).update(sale_date=when)


class TestWords:
    def test_each_commission_type_in_one_sentence(self):
        def terms(kind, rate, months=0, hold=30):
            return GroupTerms(None, "x", kind, Decimal(rate), months, hold)

        assert (
            terms_words(terms("recurring_percent", "30", 12))
            == "30% of every sale for 12 months, paid after a 30-day hold"
        )
        assert terms_words(terms("recurring_percent", "25.5", 0, 0)) == (
            "25.5% of every sale for the customer's lifetime, approved at once (no hold)"
        )
        assert terms_words(terms("percent", "20")) == (
            "20% of each first payment (renewals pay nothing), paid after a 30-day hold"
        )
        assert terms_words(terms("fixed", "5000", hold=7)) == (
            "50.00 (in the sale's currency) on each first payment (renewals pay nothing), paid after a 7-day hold"
        )
        assert terms_words(terms("recurring_fixed", "1000", 1)) == (
            "10.00 (in the sale's currency) on every sale for 1 month, paid after a 30-day hold"
        )

    def test_each_discount_in_words(self, program):
        group = PartnerGroup(program=program, discount_type="percent", discount_percent=Decimal("10.00"))
        assert discount_words(group) == "10% off the first payment"
        group.discount_duration, group.discount_duration_months = "repeating", 3
        assert discount_words(group) == "10% off every payment for 3 months"
        group.discount_duration = "forever"
        assert discount_words(group) == "10% off every payment"
        amount = PartnerGroup(
            program=program, discount_type="amount", discount_amount_cents=500, discount_currency="EUR"
        )
        assert discount_words(amount) == "5.00 EUR off the first payment"
        assert discount_words(PartnerGroup(program=program)) == ""


class TestProgramCard:
    def test_a_partner_sees_their_groups_terms_discount_and_codes(self, program, jane, bob):
        CouponCode.objects.create(program=program, partner=jane, code="JANE20")
        CouponCode.objects.create(program=program, partner=jane, code="JANEOLD", is_active=False)
        CouponCode.objects.create(program=program, partner=bob, code="BOB5")
        response = signed_in(jane).get("/portal/")
        assert response.status_code == 200
        page = text_of(response)
        assert "Your group: <strong>VIP</strong>" in page
        assert "You earn 30% of every sale for 12 months, paid after a 30-day hold." in page
        assert "Your audience gets 10% off the first payment." in page
        # The table shows the group's terms too, not the program's 20%.
        assert "30% of each sale" in page and "20% of each sale" not in page
        assert '<code id="coupon-1-1">JANE20</code>' in page
        assert 'data-copy-target="#coupon-1-1"' in page and "js/portal.js" in page
        assert "JANEOLD" not in page  # deactivated
        assert "BOB5" not in page  # another partner's

    def test_a_default_group_partner_sees_the_programs_terms_and_no_discount(self, program, bob, vip):
        page = text_of(signed_in(bob).get("/portal/"))
        assert "Your group: <strong>Default</strong>" in page
        assert "You earn 20% of each first payment (renewals pay nothing), paid after a 14-day hold." in page
        assert "Your audience gets no discount in this program." in page
        assert "No codes in this program yet." in page
        assert "VIP" not in page  # another group of the program is not named

    def test_a_default_group_with_a_discount_shows_it(self, program, bob):
        from groups.selectors import default_group

        default = default_group(program)
        PartnerGroup.objects.filter(pk=default.pk).update(
            discount_type="amount", discount_amount_cents=1500, discount_duration="forever"
        )
        assert "Your audience gets 15.00 USD off every payment." in text_of(signed_in(bob).get("/portal/"))

    def test_progress_to_the_next_tier_and_the_bonuses(self, program, jane, vip):
        gold = vip_group(program, name="Gold", slug="gold", commission_rate=Decimal("40"))
        TierRule.objects.create(group=vip, target=gold, metric="sales", period="month", threshold=10)
        TierRule.objects.create(group=vip, target=gold, metric="sales", period="month", threshold=99, is_active=False)
        TierRule.objects.create(group=gold, target=vip, direction="demote", metric="sales", threshold=1)
        Bonus.objects.create(
            group=vip, name="Launch", metric="sales", period="lifetime", threshold=5, amount_cents=10000
        )
        Bonus.objects.create(
            group=vip, name="Big quarter", metric="revenue", period="quarter", threshold=500000, amount_cents=25000
        )
        Bonus.objects.create(group=gold, name="Gold only", metric="sales", threshold=1, amount_cents=1)
        sales(program, jane, 4)
        # Older than this month and quarter: counts for lifetime only.
        sales(program, jane, 2, when=timezone.now() - timedelta(days=200))
        page = text_of(signed_in(jane).get("/portal/"))
        assert "<strong>Move to Gold</strong>: reach 10 sales this month." in page
        assert "So far: 4 sales; 6 sales more to go." in page
        assert '<progress max="10" value="4"' in page
        assert "<strong>Launch: 100.00 USD bonus</strong>: reach 5 sales in all." in page
        assert "So far: 6 sales." in page and "Reached" in page
        assert "<strong>Big quarter: 250.00 USD bonus</strong>: reach 5,000.00 in revenue this quarter." in page
        assert "So far: 400.00 in revenue; 4,600.00 in revenue more to go." in page
        assert "99 sales" not in page and "Gold only" not in page  # inactive; another group's

    def test_a_bonus_paid_this_period_shows_as_reached(self, program, jane, vip):
        bonus = Bonus.objects.create(
            group=vip, name="Monthly", metric="sales", period="month", threshold=3, amount_cents=500
        )
        commission = CommissionFactory(program=program, partner=jane, amount_cents=500)
        BonusAward.objects.create(
            bonus=bonus,
            partner=jane,
            program=program,
            period_key=period_key("month", timezone.now()),
            figure=3,
            commission=commission,
        )
        page = text_of(signed_in(jane).get("/portal/"))
        assert (
            '<strong>Monthly: 5.00 USD bonus</strong>: reach 3 sales this month. <span class="badge ok">Reached</span>'
            in page
        )

    def test_a_test_sale_and_another_partners_sales_do_not_count(self, program, jane, bob, vip):
        Bonus.objects.create(group=vip, name="Launch", metric="sales", threshold=5, amount_cents=100)
        sales(program, bob, 3)
        link = ReferralLinkFactory(program=program, partner=jane)
        SaleFactory(customer=CustomerFactory(link=link), is_test=True)
        assert "So far: 0 sales; 5 sales more to go." in text_of(signed_in(jane).get("/portal/"))


class TestIsolation:
    def test_signed_out_the_page_sends_to_sign_in_and_shows_nothing(self, jane):
        CouponCode.objects.create(program=jane.program_links.get().program, partner=jane, code="JANE20")
        response = Client().get("/portal/")
        assert response.status_code == 302 and response["Location"].startswith("/portal/sign-in")
        assert b"JANE20" not in response.content

    def test_another_workspaces_partner_of_the_same_email_sees_only_their_own(self, program, jane):
        CouponCode.objects.create(program=program, partner=jane, code="JANE20")
        other = ProgramFactory(name="Other Shop")
        other_group = vip_group(other, name="Elsewhere", slug="elsewhere", discount_percent=Decimal("50"))
        stranger = PartnerProgramFactory(program=other, partner__email="stranger@example.com", group=other_group)
        CouponCode.objects.create(program=other, partner=stranger.partner, code="STRANGER")
        page = text_of(signed_in(stranger.partner).get("/portal/"))
        assert "STRANGER" in page and "Elsewhere" in page and "50% off" in page
        assert "JANE20" not in page and "VIP" not in page and "Acme Pro" not in page

    def test_an_account_in_two_workspaces_sees_each_programs_own_group_and_codes(self, program, jane):
        CouponCode.objects.create(program=program, partner=jane, code="JANE20")
        other = ProgramFactory(name="Other Shop")
        twin = Partner.objects.create(workspace=other.workspace, name="Jane elsewhere", email=jane.email)
        PartnerProgram.objects.create(partner=twin, program=other)
        CouponCode.objects.create(program=other, partner=twin, code="JANEOTHER")
        client = signed_in(jane)
        twin.account = PartnerAccount.objects.get(pk=jane.account_id)
        twin.save(update_fields=["account"])
        page = text_of(client.get("/portal/"))
        acme, other_card = page.split('<h2 id="enrolment-1">')[1].split('<h2 id="enrolment-2">')
        assert "Acme Pro" in acme and "JANE20" in acme and "VIP" in acme and "JANEOTHER" not in acme
        assert "Other Shop" in other_card and "JANEOTHER" in other_card and "JANE20" not in other_card
        assert "Default" in other_card

    def test_a_partner_no_longer_enrolled_sees_nothing_of_the_program(self, program, jane):
        CouponCode.objects.create(program=program, partner=jane, code="JANE20")
        client = signed_in(jane)
        PartnerProgram.objects.filter(partner=jane).delete()
        page = text_of(client.get("/portal/"))
        assert "JANE20" not in page and "VIP" not in page


def test_the_card_reads_a_fixed_number_of_queries(program, jane, vip, django_assert_num_queries):
    gold = vip_group(program, name="Gold", slug="gold")
    TierRule.objects.create(group=vip, target=gold, metric="sales", period="month", threshold=10)
    Bonus.objects.create(group=vip, name="Launch", metric="sales", threshold=5, amount_cents=100)
    sales(program, jane, 2)
    client = signed_in(jane)
    # session, account, enrolments (with program and group); the card: codes, tier rules (with targets), bonuses,
    # awards; then per period key asked (this month, all time) tiers.figures' five: the watermarks, the rollups,
    # the sales above the watermark, the watermarks again, the refunds. However many sales.
    with django_assert_num_queries(17):
        assert client.get("/portal/").status_code == 200
