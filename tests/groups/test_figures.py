"""A partner's figure: the rollups of the period plus the sales not folded in yet, net of refunds."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import CustomerFactory, SaleFactory
from tiers.figures import Figures, partner_figure, partner_figures
from tracking.rollups import rollups_update

from .world import another_link, program_link, refund, sale

pytestmark = pytest.mark.django_db

DECEMBER = datetime(2026, 12, 10, 12, tzinfo=UTC)


def test_rollups_and_the_live_delta_add_up_within_the_period():
    program, link = program_link()
    sale(link, amount=1000, when=DECEMBER)
    sale(link, amount=2000, when=DECEMBER + timedelta(days=5))
    sale(link, amount=4000, when=datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC))  # November's
    rollups_update(settle=timedelta(0))  # these three are folded in
    sale(link, amount=8000, when=DECEMBER)  # live: above the watermark
    sale(link, amount=16000, when=datetime(2027, 1, 1, tzinfo=UTC))  # January's, live

    partner = link.partner_id
    assert partner_figures(program_id=program.pk, period_key="2026-12") == {partner: Figures(3, 11000)}
    assert partner_figure(program_id=program.pk, partner_id=partner, metric="sales", period_key="2026-11") == 1
    assert partner_figure(program_id=program.pk, partner_id=partner, metric="revenue", period_key="2026-Q4") == 15000
    assert partner_figure(program_id=program.pk, partner_id=partner, metric="sales", period_key="all") == 5
    assert partner_figure(program_id=program.pk, partner_id=partner, metric="revenue", period_key="all") == 31000


def test_only_attributed_live_sales_of_the_partner_in_the_program_count():
    program, link = program_link()
    other = another_link(program)
    _, elsewhere = program_link()
    sale(link, when=DECEMBER)
    sale(other, when=DECEMBER)
    SaleFactory(customer=CustomerFactory(link=link), sale_date=DECEMBER, is_test=True)
    SaleFactory(customer=CustomerFactory(link=link), sale_date=DECEMBER, attributed=False)
    SaleFactory(program=program, customer=None, partner=None, click_id="", sale_date=DECEMBER)
    sale(elsewhere, when=DECEMBER)
    rollups_update(settle=timedelta(0))
    SaleFactory(customer=CustomerFactory(link=link), sale_date=DECEMBER, is_test=True)  # live, still a test

    assert partner_figures(program_id=program.pk, period_key="2026-12") == {
        link.partner_id: Figures(1, 10000),
        other.partner_id: Figures(1, 10000),
    }
    assert partner_figures(program_id=program.pk, period_key="2026-12", partner_ids=[other.partner_id]) == {
        other.partner_id: Figures(1, 10000)
    }
    assert partner_figures(program_id=program.pk, period_key="2026-12", partner_ids=[]) == {}


@pytest.mark.parametrize("folded", [True, False])
def test_refunds_are_taken_off_at_once_a_whole_refund_takes_the_sale_off(folded):
    program, link = program_link()
    whole = sale(link, amount=1000, when=DECEMBER)
    part = sale(link, amount=3000, when=DECEMBER)
    sale(link, amount=5000, when=DECEMBER)
    if folded:
        rollups_update(settle=timedelta(0))
    refund(whole)
    refund(part, 1000)
    refund(part, 500)

    # The rollups are not run again: the refunds count from the commissions, at once.
    assert partner_figures(program_id=program.pk, period_key="2026-12") == {link.partner_id: Figures(2, 6500)}
    refund(part)  # the rest of it
    assert partner_figures(program_id=program.pk, period_key="2026-12") == {link.partner_id: Figures(1, 5000)}


def test_a_refund_of_another_period_s_sale_leaves_this_one():
    program, link = program_link()
    november = sale(link, when=datetime(2026, 11, 20, tzinfo=UTC))
    sale(link, when=DECEMBER)
    refund(november)
    assert partner_figure(program_id=program.pk, partner_id=link.partner_id, metric="sales", period_key="2026-12") == 1
    assert partner_figure(program_id=program.pk, partner_id=link.partner_id, metric="sales", period_key="2026-11") == 0
    assert partner_figure(program_id=program.pk, partner_id=link.partner_id, metric="sales", period_key="all") == 1


def test_a_void_is_no_refund():
    from commissions.services import commission_void

    program, link = program_link()
    event = sale(link, when=DECEMBER)
    commission_void(commission_id=event.commission.pk, reason="fraud", actor="user:owner")
    assert partner_figure(program_id=program.pk, partner_id=link.partner_id, metric="sales", period_key="2026-12") == 1
