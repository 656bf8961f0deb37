"""Fixtures of the fraud rule tests: a 20 % program with a 30-day hold, a partner at a company domain and its
link. The program's rules are cached per process (fraud.config); each test starts and ends with that cache
empty, so a rule changed by one test never leaks into the next one whose program reuses the same id. After every
test that used the database, every partner's ledger must agree with its commissions (flow.assert_ledger_consistent)."""

from decimal import Decimal

import pytest
from django.utils import timezone

from fraud.config import program_rules_clear
from programs.models import Partner
from tests.factories import PartnerFactory, ProgramFactory, ReferralLinkFactory

from .flow import assert_ledger_consistent


@pytest.fixture(autouse=True)
def _fresh_rules():
    program_rules_clear()
    yield
    program_rules_clear()


@pytest.fixture(autouse=True)
def _ledger_consistent_after(request):
    yield
    if request.node.get_closest_marker("django_db") is not None:
        for partner in Partner.objects.all():
            assert_ledger_consistent(partner)


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30, cookie_duration=30)


@pytest.fixture
def partner(program):
    return PartnerFactory(workspace=program.workspace, email="pat@partnerco.com")


@pytest.fixture
def link(program, partner):
    return ReferralLinkFactory(program=program, partner=partner)


@pytest.fixture
def clock(time_machine):
    """The clock stopped on a whole second: windows and hold periods are compared exactly."""
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    return time_machine
