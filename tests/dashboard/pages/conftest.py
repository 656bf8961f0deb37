"""Named users around one program: its owner, an admin, a member, an outsider, and a client signed in as each."""

import pytest
from django.test import Client

from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory, UserFactory


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", domain="acme.example.com")


@pytest.fixture
def owner(program):
    return MembershipFactory(workspace=program.workspace, role=Role.OWNER).user


@pytest.fixture
def admin(program):
    return MembershipFactory(workspace=program.workspace, role=Role.ADMIN).user


@pytest.fixture
def member(program):
    return MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user


@pytest.fixture
def outsider():
    return MembershipFactory(role=Role.OWNER).user  # owner of another workspace


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def owner_client(owner) -> Client:
    return signed_in(owner)


@pytest.fixture
def member_client(member) -> Client:
    return signed_in(member)


@pytest.fixture
def admin_role_client(admin) -> Client:
    return signed_in(admin)


@pytest.fixture
def outsider_client(outsider) -> Client:
    return signed_in(outsider)


@pytest.fixture
def stranger():
    return UserFactory()
