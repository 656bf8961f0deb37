import pytest
from rest_framework.test import APIClient

from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory


@pytest.fixture
def program():
    return ProgramFactory()


@pytest.fixture
def sign_in(api_client):
    """sign_in(program, role) signs a new member of the program's workspace in on api_client."""

    def _sign_in(program, role: str = Role.OWNER, *, active: bool = True) -> APIClient:
        membership = MembershipFactory(workspace=program.workspace, role=role, is_active=active)
        api_client.force_login(membership.user)
        return api_client

    return _sign_in


@pytest.fixture
def owner(sign_in, program) -> APIClient:
    return sign_in(program, Role.OWNER)
