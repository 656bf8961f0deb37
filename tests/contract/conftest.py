"""Fixtures of the contract cases: the published description, and one world per module that every case sees as
it was built. The world is built once inside a transaction the module holds open; each case runs in a savepoint
of it (the `db` fixture's) that is rolled back, so what one case writes no other case sees."""

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from .schema import published_schema
from .world import World, world_build


@pytest.fixture
def schema() -> dict[str, Any]:
    return published_schema()


@pytest.fixture(scope="module")
def module_world(django_db_setup, django_db_blocker) -> Iterator[World]:
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield world_build()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def _fresh(client: APIClient) -> APIClient:
    """A client with the same credentials and cookies: one case's cookie changes never reach the next."""
    twin = APIClient()
    twin.credentials(**getattr(client, "_credentials", {}))
    twin.cookies = copy.deepcopy(client.cookies)
    return twin


@pytest.fixture
def world(module_world: World, db, settings) -> World:
    # Every case sends a handful of calls; the real limits stay on (the 429 cases scale them down themselves).
    settings.RATELIMIT_SCALE = 1000
    return World(
        clients={name: _fresh(client) for name, client in module_world.clients.items()},
        ids=dict(module_world.ids),
        objects={name: copy.copy(value) for name, value in module_world.objects.items()},
    )
