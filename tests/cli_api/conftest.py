"""Named actors for the CLI tests: an account that owns a workspace, its login token, and helpers that walk the
login (start → sign-in → poll) through the API."""

from dataclasses import dataclass
from typing import Any

import pytest

from cli_api.services import cli_token_create
from cli_api.tokens import id_token_issue
from programs.keys import key_digest
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory, UserFactory

START = "/api/v1/cli/auth/start"
CALLBACK = "/api/v1/cli/auth/callback"
POLL = "/api/v1/cli/auth/poll"
LOGOUT = "/api/v1/cli/auth/logout"
INIT = "/api/v1/cli/init"
PROGRAMS = "/api/v1/cli/programs"
STATUS = "/api/v1/cli/status"
TEST_EVENT = "/api/v1/cli/test-event"


@dataclass
class Account:
    user: object
    membership: object

    @property
    def workspace(self):
        return self.membership.workspace


@pytest.fixture
def account() -> Account:
    user = UserFactory(username="ada", email="ada@example.com")
    return Account(user=user, membership=MembershipFactory(user=user, role=Role.OWNER))


@pytest.fixture
def login_token(account) -> str:
    return cli_token_create(user=account.user)[1]


@pytest.fixture
def program(account):
    return ProgramFactory(workspace=account.workspace)


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def start_login(client) -> str:
    response = client.post(START)
    assert response.status_code == 201, response.content
    return response.json()["data"]["state"]


def service_id_token(user, state: str) -> str:
    return id_token_issue(user_id=user.pk, session_digest=key_digest(state))


def sign_in(client, user, state: str):
    return client.post(CALLBACK, {"state": state, "id_token": service_id_token(user, state)}, format="json")


def error_of(response) -> dict[str, Any]:
    body = response.json()
    assert body["data"] is None
    return body["error"]


from .oidc import oidc_provider  # noqa: E402, F401  (fixture for the provider tests)
