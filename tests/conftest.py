import os
import time
import uuid
from datetime import datetime

import django_ratelimit.core
import pytest
from django.core.cache import caches
from django.utils import timezone
from rest_framework.test import APIClient

from config import celery_app
from core.logging import outages_forget
from core.redis_guard import redis_guards_reset
from fraud.config import program_rules_clear
from tests.event_activity import activity, alice_link, bob_link  # noqa: F401  (fixtures)
from tests.redis_server import own_redis  # noqa: F401  (fixture: a Redis of the test's own, to stop and start)
from tests.stripe_fake.fixtures import stripe_server  # noqa: F401  (fixture: a Stripe-compatible server)
from tests.stripe_payloads import WEBHOOK_SECRET
from tests.worker import broker_down, celery_worker_process  # noqa: F401  (fixtures: a Redis outage, a real worker)
from tracking.link_cache import link_cache_clear
from tracking.services import first_party
from tracking.services.first_party import first_party_seen_forget
from webhooks.events import endpoints_changed


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """On SQLite the test database is a file, not memory: the live server answers each request in a thread of its
    own, and an in-memory database would share one connection between those threads (concurrent requests then
    fail with "cannot start a transaction within a transaction")."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("sqlite") / "test.sqlite3")


@pytest.fixture(autouse=True)
def _test_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.PUBLIC_BASE_URL = "https://track.example.test"
    # The request log writes each call's row at once, so a test reads what it just did.
    settings.REQUEST_LOG_BATCH = 1
    # Rate limits count per instance in local memory; every test starts with empty buckets.
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "tests-ratelimit",
        },
    }
    caches["ratelimit"].clear()
    link_cache_clear()
    program_rules_clear()
    endpoints_changed()
    # Each test logs its outages afresh and finds Redis worth trying (core.logging, core.redis_guard).
    outages_forget()
    redis_guards_reset()
    yield
    caches["ratelimit"].clear()
    link_cache_clear()
    program_rules_clear()
    endpoints_changed()


@pytest.fixture(autouse=True)
def _first_party_seen_per_test(monkeypatch):
    """Each test notes first-party traffic from nothing: program ids repeat between tests, and the shared cache (Redis
    in CI, both workers) would otherwise remember an earlier test's program as already noted."""
    first_party_seen_forget()
    monkeypatch.setattr(first_party, "SEEN_CACHE_KEY", f"first-party-seen:{uuid.uuid4().hex}:{{program_id}}")
    yield
    first_party_seen_forget()


@pytest.fixture(autouse=True)
def _one_rate_limit_window_per_test(monkeypatch):
    """django-ratelimit counts in fixed windows whose edges fall anywhere in the minute; a test sending N+1
    calls could straddle an edge and see the count restart. In tests the windows start when the test starts
    (and still roll over every period, for tests that move the clock)."""
    start = int(time.time())

    def window_end(value, period: int) -> int:
        return start + period * (1 + (int(time.time()) - start) // period)

    monkeypatch.setattr(django_ratelimit.core, "_get_window", window_end)


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


@pytest.fixture
def stripe_webhook_secret(settings) -> None:
    """The webhook secret tests.stripe_payloads signs its events with."""
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET


@pytest.fixture
def frozen(request, time_machine) -> datetime:
    """Stops the clock at the test module's `NOW` (or at the current second if it names none), so stored
    times can be compared exactly. Returns the frozen time."""
    now = getattr(request.module, "NOW", None) or timezone.now().replace(microsecond=0)
    time_machine.move_to(now, tick=False)
    return now


def on_postgres() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


def pytest_collection_modifyitems(config, items):
    """PostgreSQL and worker tests run wherever DATABASE_URL names PostgreSQL and REDIS_URL is set.
    In CI they must never be skipped: a missing real part fails the run instead."""
    has_redis = bool(os.environ.get("REDIS_URL"))
    if os.environ.get("CI") == "true" and not (on_postgres() and has_redis):
        raise pytest.UsageError("CI=true needs DATABASE_URL=postgres://… and REDIS_URL")
    skip_pg = pytest.mark.skip(reason="needs DATABASE_URL=postgres://… (run .ci/run)")
    skip_redis = pytest.mark.skip(reason="needs REDIS_URL and PostgreSQL for a real Celery worker (run .ci/run)")
    for item in items:
        if "postgres" in item.keywords and not on_postgres():
            item.add_marker(skip_pg)
        if "worker" in item.keywords and not (has_redis and on_postgres()):
            item.add_marker(skip_redis)
