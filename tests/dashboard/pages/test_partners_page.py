"""Partners and links: each enrolled partner's metrics and referral links, straight from the database."""

from datetime import UTC, datetime

import pytest

from dashboard.views import PARTNERS_PER_PAGE
from programs.models import PartnerProgram
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    PartnerFactory,
    PartnerProgramFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
)

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/partners"


def test_it_lists_partners_with_their_metrics_and_links(member_client, program):
    link = ReferralLinkFactory(
        program=program, short_link="summer", clicks=42, last_clicked=datetime(2026, 2, 3, 4, 5, tzinfo=UTC)
    )
    ReferralLinkFactory(program=program, partner=link.partner, short_link="winter", is_active=False)
    PartnerProgram.objects.filter(partner=link.partner, program=program).update(
        clicks=42, leads=7, sales=3, revenue_cents=1234567
    )
    customer = CustomerFactory(link=link)
    CommissionFactory(sale=SaleFactory(customer=customer), amount_cents=246900, status="approved", credited=True)
    CommissionFactory(sale=SaleFactory(customer=customer), amount_cents=13, status="pending")

    page = member_client.get(url(program)).content.decode()

    assert link.partner.name in page and link.partner.email in page
    # Sales and revenue: the counters plus the two sales no rollup run has added to them yet (100.00 each).
    assert "<dd>42</dd>" in page and "<dd>7</dd>" in page and "<dd>5</dd>" in page
    assert "12,545.67" in page and "<dd>2,469.13</dd>" in page
    assert page.index("<code>summer</code>") < page.index("<code>winter</code>")
    assert "2026-02-03 04:05" in page
    assert '<span class="badge ok">active</span>' in page and '<span class="badge muted">off</span>' in page
    assert "never" in page  # winter was never clicked


def test_partners_are_ordered_by_revenue_and_other_programs_stay_out(member_client, program):
    small = PartnerProgramFactory(program=program, partner=PartnerFactory(name="Small Fry"), revenue_cents=100)
    big = PartnerProgramFactory(program=program, partner=PartnerFactory(name="Big Fish"), revenue_cents=9000)
    ReferralLinkFactory(short_link="elsewhere", partner=small.partner)  # the same partner in another program
    PartnerProgramFactory(program=ProgramFactory(), partner=PartnerFactory(name="Other Program Partner"))

    page = member_client.get(url(program)).content.decode()

    assert page.index(big.partner.name) < page.index(small.partner.name)
    assert "Other Program Partner" not in page and "elsewhere" not in page


def test_links_without_an_enrolled_partner_are_listed_apart(member_client, program):
    ReferralLinkFactory(program=program, partner=None, short_link="orphan")
    stray = ReferralLinkFactory(program=program, short_link="stray")
    PartnerProgram.objects.filter(partner=stray.partner).delete()

    page = member_client.get(url(program)).content.decode()

    assert 'id="unenrolled-links"' in page
    section = page[page.index('id="unenrolled-links"') :]
    assert "<code>orphan</code>" in section and "<code>stray</code>" in section
    assert "No partners enrolled yet." in page


def test_it_paginates_partners(member_client, program, django_assert_max_num_queries):
    for n in range(PARTNERS_PER_PAGE + 1):
        ReferralLinkFactory(program=program, partner=PartnerFactory(name=f"Partner {n:02d}"))
    # session, user, program, membership x2 (permission, role), the rollup watermarks, partners count and page,
    # links, unenrolled links, clicks not on the counters yet, commission rollups per partner and the sales not in
    # them yet, the sales not on the sales and revenue counters yet, the watermarks again, the pending applications,
    # the program's groups and the page's partners' coupon codes: the same however many events.
    with django_assert_max_num_queries(18):
        first = member_client.get(url(program)).content.decode()
    assert "Page 1 of 2" in first and f"{PARTNERS_PER_PAGE + 1} partners enrolled" in first
    second = member_client.get(url(program) + "?page=2").content.decode()
    assert "Page 2 of 2" in second and second.count('class="card partner"') == 1


def test_the_commission_is_what_the_partners_commissions_still_pay(member_client, program):
    link = ReferralLinkFactory(program=program)
    other = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link)

    def paid(amount: int, **fields):
        return CommissionFactory(sale=SaleFactory(customer=customer), amount_cents=amount, **fields)

    paid(1000, status="pending")  # 10.00
    paid(2000, status="approved", credited=True)  # 20.00
    paid(3000, status="refunded", credited=True, sale_refunded_cents=5000, deducted_cents=1500)  # 15.00
    paid(4000, status="refunded", credited=False, sale_refunded_cents=100, deducted_cents=20)  # cancelled: 0
    paid(5000, status="reversed", credited=True, sale_refunded_cents=25000, deducted_cents=5000)  # 0
    paid(700, status="paid", credited=True)  # 7.00
    CommissionFactory(sale=SaleFactory(customer=CustomerFactory(link=other)), amount_cents=99900)  # other partner
    CommissionFactory(amount_cents=88800)  # another program

    page = member_client.get(url(program)).content.decode()

    card = page[page.index(f'id="partner-{link.partner_id}"') :].split("</section>")[0]
    assert "<dd>52.00</dd>" in card
    other_card = page[page.index(f'id="partner-{other.partner_id}"') :].split("</section>")[0]
    assert "<dd>999.00</dd>" in other_card


def test_a_partner_without_commissions_shows_zero(member_client, program):
    link = ReferralLinkFactory(program=program)
    page = member_client.get(url(program)).content.decode()
    card = page[page.index(f'id="partner-{link.partner_id}"') :].split("</section>")[0]
    assert "<dt>Commission</dt><dd>0.00</dd>" in card
