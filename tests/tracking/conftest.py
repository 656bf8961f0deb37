"""Fixtures of the sale tests: a 20 % program with a 30-day hold and window, a partner's link, and a lead
who arrived through it. Modules that need another program define their own fixture of the same name."""

from decimal import Decimal

import pytest

from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30, cookie_duration=30)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link, customer_key="user_1", customer_status="lead")
