"""A program's mixed activity over two days (clicks, leads, sales and commissions in every state, test events,
one event outside the default range): the performance report's cases, and the rollups' (tests/tracking/
test_rollups.py), which must read the same. The fixtures are registered in tests/conftest.py."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import CommissionFactory, CustomerFactory, PartnerFactory, ReferralLinkFactory, SaleFactory
from tracking.models import ClickEvent, LeadEvent

ACTIVITY_NOW = datetime(2025, 5, 20, 15, 30, tzinfo=UTC)
ACTIVITY_DAY1 = datetime(2025, 5, 18, 9, 0, tzinfo=UTC)
ACTIVITY_DAY2 = ACTIVITY_DAY1 + timedelta(days=1)
DAY1, DAY2 = ACTIVITY_DAY1, ACTIVITY_DAY2


@pytest.fixture
def alice_link(program):
    return ReferralLinkFactory(program=program, partner=PartnerFactory(workspace=program.workspace, name="Alice"))


@pytest.fixture
def bob_link(program):
    return ReferralLinkFactory(program=program, partner=PartnerFactory(workspace=program.workspace, name="Bob"))


def click(link, when, **extra):
    customer = CustomerFactory(link=link)
    ClickEvent.objects.create(
        program=link.program, partner=link.partner, link=link, customer=customer, click_timestamp=when, **extra
    )
    return customer


def lead(customer, when, **extra):
    LeadEvent.objects.create(
        program=customer.program,
        customer=customer,
        partner=customer.first_partner,
        click_id=customer.click_id,
        lead_timestamp=when,
        **extra,
    )


def sale(customer, when, amount, commission=None, status="pending", deducted=0, credited=False, **extra):
    event = SaleFactory(customer=customer, sale_date=when, amount_cents=amount, **extra)
    if commission is not None:
        CommissionFactory(
            sale=event, amount_cents=commission, status=status, deducted_cents=deducted, credited=credited
        )
    return event


@pytest.fixture
def activity(program, alice_link, bob_link):
    a1 = click(alice_link, DAY1)
    a2 = click(alice_link, DAY1 + timedelta(hours=14, minutes=59, seconds=59))  # 23:59:59, still DAY1
    b1 = click(bob_link, DAY2)
    click(alice_link, DAY1, is_test=True)
    click(alice_link, DAY1 - timedelta(days=40))  # outside the default range
    lead(a1, DAY1)
    lead(b1, DAY2, provisional=True)  # waiting for the server: not counted
    lead(a2, DAY1, is_test=True)
    sale(a1, DAY2, 10000, commission=2000)
    sale(a1, DAY2, 3000, commission=600, status="reversed", deducted=600)  # counts, pays nothing
    sale(b1, DAY2, 5000, commission=1000, status="refunded", deducted=400, credited=True)  # pays 600
    sale(b1, DAY2, 700)  # the policy paid nothing for it
    sale(a2, DAY2, 999, attributed=False)  # not attributed: not counted
    sale(a2, DAY2, 888, commission=100, is_test=True)  # test: not counted
