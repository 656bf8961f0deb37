from datetime import datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from programs.models import AGENT_SCOPES, Program, Workspace
from programs.services import agent_key_create
from tests.factories import ProgramFactory, WorkspaceFactory


class Agent:
    """An issued agent key and a client that sends it."""

    def __init__(self, raw_key: str) -> None:
        self.raw_key = raw_key
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")

    def get(self, path: str, params: dict[str, Any] | None = None):
        return self.client.get(path, params or {})


def agent_for(
    workspace: Workspace,
    scopes: tuple[str, ...] = AGENT_SCOPES,
    programs: tuple[Program, ...] = (),
    expires_at: datetime | None = None,
) -> Agent:
    _, raw = agent_key_create(
        workspace=workspace, name="test agent", scopes=scopes, programs=programs, expires_at=expires_at
    )
    return Agent(raw)


@pytest.fixture
def workspace() -> Workspace:
    return WorkspaceFactory.create()


@pytest.fixture
def program(workspace) -> Program:
    return ProgramFactory.create(workspace=workspace)


@pytest.fixture
def agent(workspace, program) -> Agent:
    return agent_for(workspace)
