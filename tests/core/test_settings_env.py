"""Settings read from the environment: strict booleans, and the development SECRET_KEY every process shares."""

import fnmatch
import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import dev_secret_key, env_bool

BASE_DIR = Path(__file__).resolve().parents[2]


def settings_in_a_new_process(**environment: str) -> subprocess.CompletedProcess[str]:
    """Imports config.settings in a fresh interpreter with these variables; prints the values the tests read."""
    script = (
        "import json; from config import settings as s; "
        "print(json.dumps({'SECRET_KEY': s.SECRET_KEY, 'RATELIMIT_ENABLE': s.RATELIMIT_ENABLE, "
        "'ratelimit': s.CACHES['ratelimit']}))"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=60,
    )


def loaded(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


class TestStrictBooleans:
    @pytest.mark.parametrize("raw", ["true", "TRUE", "True", "1", "yes", "Yes", "on", "ON", " true "])
    def test_true_spellings(self, monkeypatch, raw):
        monkeypatch.setenv("SOME_FLAG", raw)
        assert env_bool("SOME_FLAG", default=False) is True

    @pytest.mark.parametrize("raw", ["false", "FALSE", "0", "no", "NO", "off", "Off"])
    def test_false_spellings(self, monkeypatch, raw):
        monkeypatch.setenv("SOME_FLAG", raw)
        assert env_bool("SOME_FLAG", default=True) is False

    @pytest.mark.parametrize("default", [True, False])
    def test_unset_or_empty_is_the_default(self, monkeypatch, default):
        monkeypatch.delenv("SOME_FLAG", raising=False)
        assert env_bool("SOME_FLAG", default=default) is default
        monkeypatch.setenv("SOME_FLAG", "")
        assert env_bool("SOME_FLAG", default=default) is default

    @pytest.mark.parametrize("raw", ["ture", "flase", "2", "enabled", "y", "t", "-1", "truee"])
    def test_anything_else_fails_loudly_naming_the_setting(self, monkeypatch, raw):
        monkeypatch.setenv("SOME_FLAG", raw)
        with pytest.raises(ImproperlyConfigured, match=f"SOME_FLAG must be one of .*got '{raw}'"):
            env_bool("SOME_FLAG", default=True)

    @pytest.mark.parametrize(
        "name",
        [
            "DEBUG",
            "RATELIMIT_ENABLE",
            "RATELIMIT_SHARED",
            "CELERY_TASK_ALWAYS_EAGER",
            "DB_PREPARED_STATEMENTS",
            "BENCH_TRIVIAL_ENDPOINT",
            "FAST_PASSWORD_HASHER",
        ],
    )
    def test_every_boolean_setting_refuses_a_typo_at_start_up(self, name):
        # Before, django-environ read `ture` as false: rate limiting was silently switched off.
        result = settings_in_a_new_process(**{name: "ture"})
        assert result.returncode != 0
        assert f"ImproperlyConfigured: {name} must be one of" in result.stderr

    def test_a_spelling_it_accepts_reaches_the_setting(self):
        assert loaded(settings_in_a_new_process(RATELIMIT_ENABLE="OFF"))["RATELIMIT_ENABLE"] is False


def _key_of(path: str) -> str:
    return dev_secret_key(Path(path))


class TestDevelopmentSecretKey:
    def test_it_is_generated_once_into_an_owner_only_file(self, tmp_path):
        path = tmp_path / ".secret_key"
        key = dev_secret_key(path)
        assert len(key) >= 50
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert dev_secret_key(path) == key
        assert [p.name for p in tmp_path.iterdir()] == [".secret_key"]  # no temporary file left behind

    def test_processes_starting_at_once_agree_on_one_key(self, tmp_path):
        path = tmp_path / ".secret_key"
        with ProcessPoolExecutor(8) as pool:
            keys = set(pool.map(_key_of, [str(path)] * 32))
        assert keys == {path.read_text().strip()}

    def test_an_empty_file_is_refused_rather_than_signing_with_nothing(self, tmp_path):
        path = tmp_path / ".secret_key"
        path.write_text("")
        with pytest.raises(ImproperlyConfigured, match="is empty"):
            dev_secret_key(path)

    def test_without_secret_key_every_process_of_a_checkout_signs_with_the_same_key(self, tmp_path):
        path = tmp_path / ".secret_key"
        first = loaded(settings_in_a_new_process(DEBUG="true", SECRET_KEY="", SECRET_KEY_FILE=str(path)))
        second = loaded(settings_in_a_new_process(DEBUG="true", SECRET_KEY="", SECRET_KEY_FILE=str(path)))
        assert first["SECRET_KEY"] == second["SECRET_KEY"] == path.read_text().strip()

    def test_a_set_secret_key_wins_and_no_file_is_written(self, tmp_path):
        path = tmp_path / ".secret_key"
        result = settings_in_a_new_process(DEBUG="true", SECRET_KEY="from-the-environment", SECRET_KEY_FILE=str(path))
        assert loaded(result)["SECRET_KEY"] == "from-the-environment"
        assert not path.exists()

    def test_production_still_refuses_to_start_without_secret_key(self, tmp_path):
        path = tmp_path / ".secret_key"
        result = settings_in_a_new_process(DEBUG="false", SECRET_KEY="", SECRET_KEY_FILE=str(path))
        assert result.returncode != 0
        assert "ImproperlyConfigured: SECRET_KEY is required when DEBUG is off" in result.stderr
        assert not path.exists()

    def test_the_key_file_is_ignored_by_git(self):
        patterns = (BASE_DIR / ".gitignore").read_text().splitlines()
        assert any(fnmatch.fnmatch(".secret_key", pattern) for pattern in patterns)


SQLITE_WRITERS_SCRIPT = """
import os, threading, time, django
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
django.setup()
from django.db import connection, transaction
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE IF NOT EXISTS probe (n integer)")
errors = []
def write():
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM probe")
            time.sleep(0.2)
            cursor.execute("INSERT INTO probe VALUES (1)")
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()
threads = [threading.Thread(target=write) for _ in range(4)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
print(errors)
"""


def test_sqlite_writers_wait_for_each_other_instead_of_failing(tmp_path):
    """`make run` serves SQLite from several processes: transactions that read and then write, begun at the same
    time, must queue for the write lock, not fail with "database is locked" (config.settings: IMMEDIATE, WAL)."""
    result = subprocess.run(
        [sys.executable, "-c", SQLITE_WRITERS_SCRIPT],
        cwd=BASE_DIR,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
