"""commissions.selectors: what a commission still pays, per state, and the per-partner sums."""

import pytest

from commissions.selectors import commission_payable_by_partner, commissions_with_money
from tests.factories import CommissionFactory, CustomerFactory, ReferralLinkFactory, SaleFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("status", "credited", "deducted", "payable", "clawed_back"),
    [
        ("pending", False, 0, 2000, 0),  # in its hold: pays all of it once approved
        ("approved", True, 0, 2000, 0),
        ("paid", True, 0, 2000, 0),
        ("refunded", True, 500, 1500, 500),  # credited, then partly refunded: the rest
        ("refunded", False, 500, 0, 0),  # partly refunded while pending: cancelled whole, never credited
        ("reversed", True, 2000, 0, 2000),  # credited, then refunded whole
        ("reversed", False, 2000, 0, 0),  # refunded whole while pending
    ],
)
def test_what_a_commission_still_pays(status, credited, deducted, payable, clawed_back):
    CommissionFactory(amount_cents=2000, status=status, credited=credited, deducted_cents=deducted)
    commission = commissions_with_money().get()
    assert (commission.payable_cents, commission.clawed_back_cents) == (payable, clawed_back)


def test_sums_by_partner_for_one_program():
    link = ReferralLinkFactory()
    other = ReferralLinkFactory(program=link.program)
    customer = CustomerFactory(link=link)
    CommissionFactory(sale=SaleFactory(customer=customer), amount_cents=1000)
    CommissionFactory(sale=SaleFactory(customer=customer), amount_cents=700, status="refunded", deducted_cents=70)
    CommissionFactory(
        sale=SaleFactory(customer=customer), amount_cents=300, status="refunded", credited=True, deducted_cents=30
    )
    CommissionFactory(amount_cents=5000)  # another program, maybe the same partner elsewhere
    assert commission_payable_by_partner(
        program_id=link.program_id, partner_ids=[link.partner_id, other.partner_id]
    ) == {link.partner_id: 1270}
