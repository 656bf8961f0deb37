import os

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from config import celery_app


@pytest.fixture(autouse=True)
def _test_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.PUBLIC_BASE_URL = "https://track.example.test"
    # Rate limits count per instance in local memory; every test starts with empty buckets.
    settings.CACHES = {**settings.CACHES, "ratelimit": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests-ratelimit"}}
    caches["ratelimit"].clear()
    yield
    caches["ratelimit"].clear()


@pytest.fixture(autouse=True)
def _eager_celery():
    """Tasks run in-process unless a test starts a real worker (see tests/worker.py)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


def on_postgres() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


def pytest_collection_modifyitems(config, items):
    """PostgreSQL-only tests run wherever DATABASE_URL names PostgreSQL. In CI they must never be
    skipped: a missing database fails the run instead."""
    if on_postgres():
        return
    if os.environ.get("CI") == "true":
        raise pytest.UsageError("CI=true but DATABASE_URL does not point to PostgreSQL")
    skip = pytest.mark.skip(reason="needs DATABASE_URL=postgres://… (run .ci/run)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)
