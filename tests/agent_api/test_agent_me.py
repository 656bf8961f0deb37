"""GET /api/agent/v1/me: what the key may do, without needing a scope."""

import pytest

from tests.agent_api.conftest import agent_for

pytestmark = pytest.mark.django_db


def test_it_describes_the_key_without_needing_a_scope(workspace, program):
    agent = agent_for(workspace, scopes=("commissions:read",), programs=(program,))
    data = agent.get("/api/agent/v1/me").json()["data"]
    assert data["workspace_id"] == workspace.pk
    assert data["program_ids"] == [program.pk]
    assert data["scopes"] == ["commissions:read"]
    assert data["expires_at"] is None
    assert data["masked"].endswith(agent.raw_key[-4:]) and agent.raw_key not in str(data)


def test_an_unlimited_key_has_no_program_list(agent):
    assert agent.get("/api/agent/v1/me").json()["data"]["program_ids"] is None
