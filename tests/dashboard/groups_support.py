"""Fixtures and helpers of the Groups tab's tests (tests/dashboard/test_groups_*.py): a program with its owner,
admin, member and an outsider (another workspace's owner), each with a signed-in client, and partners enrolled in it."""

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from agent_api.models import AgentAuditEntry
from groups.selectors import default_group
from groups.services import group_create
from programs.models import Role
from tests.factories import MembershipFactory, PartnerFactory, PartnerProgramFactory, ProgramFactory


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", domain="acme.example.com")


@pytest.fixture
def owner(program):
    return MembershipFactory(workspace=program.workspace, role=Role.OWNER, user__username="olivia").user


@pytest.fixture
def owner_client(owner) -> Client:
    return signed_in(owner)


@pytest.fixture
def admin_client(program) -> Client:
    return signed_in(MembershipFactory(workspace=program.workspace, role=Role.ADMIN).user)


@pytest.fixture
def member_client(program) -> Client:
    return signed_in(MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user)


@pytest.fixture
def outsider_client() -> Client:
    return signed_in(MembershipFactory(role=Role.OWNER).user)


@pytest.fixture
def default(program):
    return default_group(program)


@pytest.fixture
def vip(program):
    return group_create(program=program, name="VIP", commission_rate=30, discount_type="percent", discount_percent=10)


@pytest.fixture
def enrolment(program):
    return PartnerProgramFactory(program=program, partner=PartnerFactory(workspace=program.workspace, name="Jane"))


@pytest.fixture
def partner(enrolment):
    return enrolment.partner


@pytest.fixture
def elsewhere():
    """Another workspace's program with a group, an enrolled partner (and their code is made by the tests)."""
    other = ProgramFactory(name="Other Co")
    group = group_create(program=other, name="Theirs")
    enrolled = PartnerProgramFactory(program=other, partner=PartnerFactory(workspace=other.workspace, name="Theo"))
    return {"program": other, "group": group, "enrolment": enrolled, "partner": enrolled.partner}


def base(program) -> str:
    return f"/programs/{program.pk}"


def flashed(response) -> list[str]:
    """The message this response flashed (those of earlier requests wait unread in the session before it)."""
    return [str(message) for message in get_messages(response.wsgi_request)][-1:]


def audit_entries(action: str) -> list[AgentAuditEntry]:
    return list(AgentAuditEntry.objects.filter(action=action).order_by("pk"))


def group_post(**fields) -> dict[str, str]:
    """A group form's POST: a valid 25% group with no discount, with `fields` changed."""
    data = {
        "name": "Partners 25",
        "commission_type": "percent",
        "commission_rate": "25",
        "duration_months": "0",
        "hold_days": "30",
        "discount_type": "",
        "discount_percent": "",
        "discount_amount": "",
        "discount_currency": "USD",
        "discount_duration": "once",
        "discount_duration_months": "",
        "application_questions": "",
    }
    data.update({name: str(value) for name, value in fields.items()})
    return data
