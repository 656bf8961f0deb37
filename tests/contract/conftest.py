"""Fixtures of the contract cases: the published description and a world built anew for each case."""

from typing import Any

import pytest

from .schema import published_schema
from .world import World, world_build


@pytest.fixture
def schema() -> dict[str, Any]:
    return published_schema()


@pytest.fixture
def world(db, settings) -> World:
    # Every case sends a handful of calls; the real limits stay on (the 429 cases scale them down themselves).
    settings.RATELIMIT_SCALE = 1000
    return world_build()
