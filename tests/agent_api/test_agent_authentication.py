"""Only an agent key authenticates /api/agent/v1/: every other credential gets 401 saying what it is."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agent_api import messages
from cli_api.services import cli_token_create
from programs.models import AgentKey
from programs.services import agent_key_revoke, program_key_install
from tests.agent_api.conftest import agent_for
from tests.factories import MembershipFactory, ProgramFactory
from tests.helpers import platform_error

pytestmark = pytest.mark.django_db

PROGRAMS = "/api/agent/v1/programs"


def unauthorized(message: str, code: str) -> dict[str, Any]:
    return platform_error(401, "UnauthorizedError", message, code)


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_it_answers_a_valid_agent_key(agent):
    response = agent.get(PROGRAMS)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"


def test_it_refuses_a_call_without_a_key():
    response = APIClient().get(PROGRAMS)
    assert response.status_code == 401
    assert response.json() == unauthorized(messages.KEY_REQUIRED, "missing_api_key")
    assert response["WWW-Authenticate"] == 'Bearer realm="agent"'


def test_it_refuses_a_program_key(program):
    response = bearer(program.raw_api_key).get(PROGRAMS)
    assert response.json() == unauthorized(messages.PROGRAM_KEY_REFUSED, "wrong_credential")
    response = bearer(program.raw_test_api_key).get(PROGRAMS)
    assert response.json() == unauthorized(messages.PROGRAM_KEY_REFUSED, "wrong_credential")


def test_it_refuses_a_program_key_from_before_the_prefix(workspace):
    legacy = ProgramFactory.create(workspace=workspace)
    program_key_install(program=legacy, raw_key="legacy-key-without-any-prefix-0123456789")
    response = bearer("legacy-key-without-any-prefix-0123456789").get(PROGRAMS)
    assert response.json() == unauthorized(messages.PROGRAM_KEY_REFUSED, "wrong_credential")


def test_it_refuses_a_cli_login_token(workspace):
    user = MembershipFactory.create(workspace=workspace).user
    response = bearer(cli_token_create(user=user)[1]).get(PROGRAMS)
    assert response.json() == unauthorized(messages.LOGIN_TOKEN_REFUSED, "wrong_credential")


def test_it_refuses_a_dashboard_session(workspace):
    client = APIClient()
    client.force_login(MembershipFactory.create(workspace=workspace).user)
    response = client.get(PROGRAMS)
    assert response.json() == unauthorized(messages.KEY_REQUIRED, "missing_api_key")


@pytest.mark.parametrize("token", ["agt_not-a-real-key", "agt_", "nonsense", "Bearer", "agt_" + "x" * 5000])
def test_it_refuses_an_unknown_key(workspace, token):
    response = bearer(token).get(PROGRAMS)
    assert response.status_code == 401
    assert response.json()["error"]["code"] in {"invalid_api_key", "missing_api_key"}


def test_it_refuses_a_revoked_key_saying_so(workspace, program):
    agent = agent_for(workspace)
    agent_key_revoke(key=AgentKey.objects.get())
    assert agent.get(PROGRAMS).json() == unauthorized(messages.KEY_REVOKED, "api_key_revoked")


def test_it_refuses_an_expired_key_saying_when(workspace, program):
    expired_at = timezone.now() - timedelta(minutes=1)
    agent = agent_for(workspace, expires_at=expired_at)
    assert agent.get(PROGRAMS).json() == unauthorized(
        messages.KEY_EXPIRED.format(expired_at=expired_at.isoformat()), "api_key_expired"
    )


def test_a_key_expiring_later_works(workspace, program):
    agent = agent_for(workspace, expires_at=timezone.now() + timedelta(days=1))
    assert agent.get(PROGRAMS).status_code == 200


def test_a_key_without_a_workspace_never_authenticates(workspace, program):
    agent = agent_for(workspace)
    AgentKey.objects.update(workspace=None)
    assert agent.get(PROGRAMS).json() == unauthorized(messages.KEY_UNBOUND, "invalid_api_key")


def test_it_records_when_a_key_was_last_used_at_most_once_a_minute(agent):
    agent.get(PROGRAMS)
    first = AgentKey.objects.get().last_used_at
    assert first is not None
    agent.get(PROGRAMS)
    assert AgentKey.objects.get().last_used_at == first


def test_the_raw_key_is_stored_only_as_its_hash(workspace):
    agent = agent_for(workspace)
    key = AgentKey.objects.get()
    assert agent.raw_key not in str(AgentKey.objects.values().get())
    assert key.masked.endswith(agent.raw_key[-4:])


def test_every_call_carries_the_rate_limit_headers(agent):
    response = agent.get(PROGRAMS)
    assert response["X-RateLimit-Limit"] == "120"
    assert int(response["X-RateLimit-Remaining"]) == 119
