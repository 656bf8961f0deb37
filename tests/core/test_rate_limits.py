import json
import os
import runpy
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from core.counter_cache import RedisCounterCache, SQLiteCounterCache, instance_counter_file
from tests.core.urls import CALLS
from tests.factories import ProgramFactory
from tests.helpers import assert_rate_limited

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.urls")]

BASE_DIR = Path(__file__).resolve().parents[2]


def test_every_response_carries_the_rate_limit_headers(api_client):
    response = api_client.post("/t/ignored", {}, format="json")
    assert response["X-RateLimit-Limit"] == "60"
    assert response["X-RateLimit-Remaining"] == "59"
    reset = int(response["X-RateLimit-Reset"])
    assert int(time.time()) <= reset <= time.time() + 61


def test_error_responses_carry_them_too(api_client):
    response = api_client.post("/t/required", {}, format="json")
    assert response.status_code == 401
    assert response["X-RateLimit-Limit"] == "120"


def test_the_limit_answers_429_in_the_typed_envelope_before_the_view_runs(api_client):
    for _ in range(30):
        assert api_client.post("/t/optional", {}, format="json").status_code == 200
    CALLS.clear()
    response = api_client.post("/t/optional", {}, format="json")
    assert_rate_limited(response)
    assert CALLS == []


def test_keyed_routes_count_per_key_and_fall_back_to_ip(api_client):
    first, second = ProgramFactory(), ProgramFactory()
    for _ in range(120):
        api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {first.raw_api_key}")
    limited = api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {first.raw_api_key}")
    assert limited.status_code == 429
    other = api_client.post("/t/required", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {second.raw_api_key}")
    assert other.status_code == 200
    keyless = api_client.post("/t/required", {}, format="json")
    assert keyless.status_code == 401  # its own IP bucket, not the first key's


def test_ip_routes_count_per_client_ip(api_client):
    for _ in range(30):
        api_client.post("/t/optional", {}, format="json", REMOTE_ADDR="10.0.0.1")
    assert api_client.post("/t/optional", {}, format="json", REMOTE_ADDR="10.0.0.1").status_code == 429
    assert api_client.post("/t/optional", {}, format="json", REMOTE_ADDR="10.0.0.2").status_code == 200


def test_forwarded_for_is_ignored_without_trusted_proxies(api_client):
    for n in range(30):
        api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
    assert api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429


def test_forwarded_for_counts_behind_a_trusted_proxy(api_client, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    for _ in range(30):
        api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="spoofed, 203.0.113.7")
    limited = api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert limited.status_code == 429
    other = api_client.post("/t/optional", {}, format="json", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert other.status_code == 200


def test_the_scale_setting_multiplies_every_limit(api_client, settings):
    settings.RATELIMIT_SCALE = 10
    response = api_client.post("/t/optional", {}, format="json")
    assert response["X-RateLimit-Limit"] == "300"


# --- Where the counts live: one place per server instance, whatever its number of processes ----------------------


def _ratelimit_cache_in_a_new_process(**environment: str) -> dict[str, Any]:
    """CACHES["ratelimit"] as config.settings resolves it in a fresh interpreter with these variables."""
    script = "import json; from config import settings; print(json.dumps(settings.CACHES['ratelimit']))"
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        env={**os.environ, "INSTANCE_ID": "", "REDIS_URL": "", "RATELIMIT_SHARED": "", **environment},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


class TestCountsPerInstance:
    def test_without_redis_an_instances_processes_count_in_its_file(self):
        cache = _ratelimit_cache_in_a_new_process(INSTANCE_ID="web-1")
        assert cache == {
            "BACKEND": "core.counter_cache.SQLiteCounterCache",
            "LOCATION": str(instance_counter_file("web-1")),
        }

    def test_with_redis_the_counts_are_keyed_by_the_instance(self):
        cache = _ratelimit_cache_in_a_new_process(INSTANCE_ID="web-1", REDIS_URL="redis://127.0.0.1:6379/9")
        assert cache == {
            "BACKEND": "core.counter_cache.RedisCounterCache",
            "LOCATION": "redis://127.0.0.1:6379/9",
            "KEY_PREFIX": "ratelimit:web-1",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }

    def test_rate_limit_shared_counts_once_for_every_instance(self):
        cache = _ratelimit_cache_in_a_new_process(
            INSTANCE_ID="web-1", REDIS_URL="redis://127.0.0.1:6379/9", RATELIMIT_SHARED="true"
        )
        assert cache["KEY_PREFIX"] == "ratelimit:shared"

    def test_a_lone_process_is_an_instance_of_its_own(self):
        cache = _ratelimit_cache_in_a_new_process()
        assert cache["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"

    def test_a_gunicorn_worker_without_the_config_file_shares_its_masters_counts(self):
        # gunicorn's master exports SERVER_SOFTWARE; its workers' parent is the master (here: this process).
        cache = _ratelimit_cache_in_a_new_process(SERVER_SOFTWARE="gunicorn/27.0.1")
        assert cache["LOCATION"] == str(instance_counter_file(f"gunicorn-{os.getpid()}"))

    def test_the_gunicorn_config_gives_its_workers_one_instance_id(self, monkeypatch):
        monkeypatch.setenv("INSTANCE_ID", "")
        runpy.run_path(str(BASE_DIR / "config" / "gunicorn.conf.py"))
        generated = os.environ["INSTANCE_ID"]
        assert generated.startswith("gunicorn-") and len(generated) > len("gunicorn-")
        monkeypatch.setenv("INSTANCE_ID", "web-7")
        config = runpy.run_path(str(BASE_DIR / "config" / "gunicorn.conf.py"))
        assert os.environ["INSTANCE_ID"] == "web-7"
        assert config["workers"] >= 2 and config["wsgi_app"] == "config.wsgi:application"


@pytest.fixture
def counter_file(tmp_path) -> str:
    return str(tmp_path / "counters.sqlite3")


def _count_calls(path: str, calls: int) -> None:
    """What django-ratelimit does per request: add the key at 1, or increment it."""
    cache = SQLiteCounterCache(path, {})
    for _ in range(calls):
        if not cache.add("bucket", 1, 60):
            cache.incr("bucket")


def _count_one_calls(path: str, calls: int) -> None:
    """What the rate limit does per request with our counter caches: one count_one."""
    cache = SQLiteCounterCache(path, {})
    for _ in range(calls):
        cache.count_one("bucket", 60)


class TestSQLiteCounterCache:
    def test_counts_from_several_processes_at_once_all_add_up(self, counter_file):
        with ProcessPoolExecutor(4) as pool:
            list(pool.map(_count_calls, [counter_file] * 4, [250] * 4))
        assert SQLiteCounterCache(counter_file, {}).get("bucket") == 1000

    def test_count_one_from_several_processes_at_once_all_add_up(self, counter_file):
        with ProcessPoolExecutor(4) as pool:
            list(pool.map(_count_one_calls, [counter_file] * 4, [250] * 4))
        assert SQLiteCounterCache(counter_file, {}).get("bucket") == 1000

    def test_count_one_starts_at_one_counts_on_and_restarts_once_expired(self, counter_file, time_machine):
        time_machine.move_to("2025-03-10 12:00:00", tick=False)
        cache = SQLiteCounterCache(counter_file, {})
        assert [cache.count_one("bucket", 65) for _ in range(3)] == [1, 2, 3]
        assert cache.get("bucket") == 3  # what the rate limit's peek reads
        time_machine.shift(64)
        assert cache.count_one("bucket", 65) == 4  # the window's expiry is the first count's
        time_machine.shift(2)
        assert cache.get("bucket") is None
        assert cache.count_one("bucket", 65) == 1

    @pytest.mark.parametrize("code", [sqlite3.SQLITE_BUSY, 261, sqlite3.SQLITE_LOCKED])  # 261: SQLITE_BUSY_RECOVERY
    def test_a_busy_database_is_waited_for_whatever_its_extended_code(self, code):
        class BusyOnce:
            calls = 0

            def execute(self, sql, parameters):
                self.calls += 1
                if self.calls == 1:
                    error = sqlite3.OperationalError("database is locked")
                    error.sqlite_errorcode = code
                    raise error
                return "done"

        connection = BusyOnce()
        assert SQLiteCounterCache._retry_busy(connection, "SELECT 1", ()) == "done"
        assert connection.calls == 2

    def test_add_keeps_a_live_count_and_restarts_an_expired_one(self, counter_file, time_machine):
        time_machine.move_to("2025-03-10 12:00:00", tick=False)
        cache = SQLiteCounterCache(counter_file, {})
        assert cache.add("bucket", 1, 65) is True
        assert cache.add("bucket", 1, 65) is False
        assert cache.incr("bucket") == 2
        time_machine.shift(66)
        assert cache.get("bucket") is None
        assert cache.add("bucket", 1, 65) is True
        assert cache.get("bucket") == 1

    def test_incr_of_a_missing_or_expired_key_raises_as_django_caches_do(self, counter_file, time_machine):
        cache = SQLiteCounterCache(counter_file, {})
        with pytest.raises(ValueError):
            cache.incr("nothing")
        time_machine.move_to("2025-03-10 12:00:00", tick=False)
        cache.set("bucket", 5, 10)
        time_machine.shift(11)
        with pytest.raises(ValueError):
            cache.incr("bucket")

    def test_the_rest_of_the_cache_api(self, counter_file):
        cache = SQLiteCounterCache(counter_file, {})
        cache.set("thing", {"a": [1, 2]}, None)
        assert cache.get("thing") == {"a": [1, 2]}
        assert cache.has_key("thing") and not cache.has_key("other")
        assert cache.touch("thing", 30) is True
        assert cache.delete("thing") is True and cache.get("thing", "gone") == "gone"
        cache.set("count", 3)
        assert cache.incr("count", 4) == 7 and cache.decr("count") == 6
        cache.clear()
        assert cache.get("count") is None

    def test_the_limit_headers_and_typed_429_are_unchanged_on_it(self, api_client, settings, counter_file):
        settings.CACHES = {
            **settings.CACHES,
            "ratelimit": {"BACKEND": "core.counter_cache.SQLiteCounterCache", "LOCATION": counter_file},
        }
        for sent in range(1, 31):
            response = api_client.post("/t/optional", {}, format="json")
            assert response.status_code == 200
            assert response["X-RateLimit-Remaining"] == str(30 - sent)
        CALLS.clear()
        assert_rate_limited(api_client.post("/t/optional", {}, format="json"))
        assert CALLS == []
        assert SQLiteCounterCache(counter_file, {}).get(_only_key(counter_file)) == 31


def _only_key(path: str) -> str:
    with sqlite3.connect(path) as connection:
        [(key,)] = connection.execute("SELECT key FROM cache").fetchall()
    # Stored with Django's key prefix and version; get() adds them again.
    return key.split(":", 2)[2]


class TestRedisCounterCache:
    UNREACHABLE = "redis://127.0.0.1:1/0"  # nothing listens on port 1

    def test_while_redis_is_unreachable_the_process_still_counts_and_answers(self, api_client, settings, caplog):
        settings.CACHES = {
            **settings.CACHES,
            "ratelimit": {
                "BACKEND": "core.counter_cache.RedisCounterCache",
                "LOCATION": self.UNREACHABLE,
                "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
            },
        }
        for sent in range(1, 31):
            response = api_client.post("/t/optional", {}, format="json")
            assert response.status_code == 200
            assert response["X-RateLimit-Remaining"] == str(30 - sent)
        assert_rate_limited(api_client.post("/t/optional", {}, format="json"))
        warnings = [
            record for record in caplog.records if record.getMessage().startswith("ratelimit.redis_unavailable:")
        ]
        assert len(warnings) == 1  # once a minute per process, not once per call

    def test_count_one_while_redis_is_unreachable_counts_in_the_process(self):
        cache = RedisCounterCache(self.UNREACHABLE, {"OPTIONS": {"socket_connect_timeout": 0.5}})
        assert [cache.count_one("bucket", 65) for _ in range(3)] == [1, 2, 3]

    def test_a_failure_between_add_and_incr_restarts_the_count_locally(self):
        cache = RedisCounterCache(self.UNREACHABLE, {"OPTIONS": {"socket_connect_timeout": 0.5}})
        # As if Redis took the add and then went away: the local fallback has no count yet.
        assert cache.incr("bucket") == 1
        assert cache.incr("bucket") == 2


def _redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true needs REDIS_URL", pytrace=False)
        pytest.skip("needs REDIS_URL")
    return url


def test_count_one_on_redis_counts_in_one_key_that_expires_with_its_window():
    cache = RedisCounterCache(_redis_url(), {"KEY_PREFIX": f"ratelimit:test-count-{os.getpid()}"})
    try:
        assert [cache.count_one("bucket", 65) for _ in range(3)] == [1, 2, 3]
        assert cache.get("bucket") == 3  # what the rate limit's peek reads
        client = cache._cache.get_client(write=False)
        assert 0 < client.ttl(cache.make_and_validate_key("bucket")) <= 65
    finally:
        cache.clear()


def test_the_limit_headers_and_typed_429_on_redis(api_client, settings):
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {
            "BACKEND": "core.counter_cache.RedisCounterCache",
            "LOCATION": _redis_url(),
            "KEY_PREFIX": f"ratelimit:test-route-{os.getpid()}",
        },
    }
    from django.core.cache import caches

    try:
        for sent in range(1, 31):
            response = api_client.post("/t/optional", {}, format="json")
            assert response.status_code == 200
            assert response["X-RateLimit-Remaining"] == str(30 - sent)
        assert_rate_limited(api_client.post("/t/optional", {}, format="json"))
    finally:
        caches["ratelimit"].clear()


def test_clearing_the_redis_counts_leaves_the_rest_of_redis_alone():
    url = _redis_url()
    cache = RedisCounterCache(url, {"KEY_PREFIX": "ratelimit:test-clear"})
    neighbour = RedisCounterCache(url, {"KEY_PREFIX": "ratelimit:test-neighbour"})
    cache.add("bucket", 1, 60)
    neighbour.add("bucket", 1, 60)
    cache.clear()
    assert cache.get("bucket") is None
    assert neighbour.get("bucket") == 1
    neighbour.delete("bucket")
