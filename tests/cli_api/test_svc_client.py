"""The `svc` client end to end against a live test server: Typer's CliRunner in-process, and the installed console
script in a subprocess. The browser is a plain HTTP client that signs in through the dashboard's login form and
confirms on /cli/login, as a person would."""

import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
from django.utils import timezone
from typer.testing import CliRunner

from cli_api.models import CliLoginSession, CliTestRun, CliToken
from cli_api.services import cli_token_create
from programs.models import Program, ProgramKey
from svc_cli import client as svc_client
from svc_cli.main import app
from tests.factories import ProgramFactory

PASSWORD = "pass-word-123"
UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture
def server(live_server, settings) -> str:
    # Login links point at the live server, so the "browser" can open them.
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


@pytest.fixture
def config_dir(tmp_path) -> Path:
    return tmp_path / "svc-config"


@pytest.fixture
def svc(server, config_dir):
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None):
        environment = {
            "SVC_CONFIG_DIR": str(config_dir),
            "SVC_BASE_URL": server,
            "SVC_POLL_INTERVAL": "0.05",
            "SVC_API_KEY": None,
            "COLUMNS": "250",
            **(env or {}),
        }
        return runner.invoke(app, list(args), input=input, env=environment, catch_exceptions=False)

    return invoke


class Browser:
    """Signs in through /accounts/login/ and answers the confirmation page, over HTTP."""

    def __init__(self, username: str, action: str = "approve", delay: float = 0.2) -> None:
        self.username, self.action, self.delay = username, action, delay
        self.opened: list[str] = []
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def open(self, url: str, *args, **kwargs) -> bool:
        self.opened.append(url)
        thread = threading.Thread(target=self._sign_in, args=(url,))
        thread.start()
        self.threads.append(thread)
        return True

    def _sign_in(self, url: str) -> None:
        try:
            time.sleep(self.delay)  # the terminal is polling meanwhile
            with httpx.Client(follow_redirects=True, timeout=10) as http:
                form = http.get(url)  # redirected to the sign-in form, ?next= back to the page
                assert "/accounts/login/" in str(form.url)
                next_field = re.search(r'name="next" value="([^"]*)"', form.text)
                assert next_field is not None, form.text
                page = http.post(
                    str(form.url),
                    data={
                        "username": self.username,
                        "password": PASSWORD,
                        "next": next_field.group(1),
                        "csrfmiddlewaretoken": http.cookies["csrftoken"],
                    },
                    headers={"Referer": str(form.url)},
                )
                assert page.url.path == "/cli/login", page.text
                done = http.post(
                    str(page.url),
                    data={"action": self.action, "csrfmiddlewaretoken": http.cookies["csrftoken"]},
                    headers={"Referer": str(page.url)},
                )
                assert done.status_code == 200, done.text
        except BaseException as exc:
            self.errors.append(exc)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=10)
        assert self.errors == []


def login(svc, username: str = "ada", *extra: str, action: str = "approve"):
    browser = Browser(username, action=action)
    with mock.patch("svc_cli.main.webbrowser.open", side_effect=browser.open):
        result = svc("login", *extra)
    browser.join()
    return result, browser


def saved(config_dir: Path) -> dict[str, Any]:
    return json.loads((config_dir / "credentials.json").read_text())


def only_json(result) -> dict[str, Any]:
    return json.loads(result.stdout)


pytestmark = pytest.mark.django_db(transaction=True)


def test_from_nothing_to_a_verified_program(svc, account, config_dir, server):
    # svc login: the link is opened in the browser, the terminal polls, the token is saved for the owner only.
    result, browser = login(svc)
    assert result.exit_code == 0, result.output
    assert browser.opened[0].startswith(f"{server}/cli/login?state=")
    assert "Open this link to sign in" in result.stdout and "Logged in as ada" in result.stdout
    credentials = saved(config_dir)
    assert credentials["base_url"] == server and credentials["user"]["username"] == "ada"
    assert stat.S_IMODE((config_dir / "credentials.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(config_dir.stat().st_mode) == 0o700
    token = CliToken.objects.get()
    assert token.user == account.user and token.revoked_at is None
    assert credentials["token"] not in result.output

    # svc programs: nothing yet.
    result = svc("programs")
    assert result.exit_code == 0 and "No programs yet" in result.stdout

    # svc init: the keys are shown once.
    result = svc(
        "init",
        "--name",
        "Acme",
        "--domain",
        "acme.example.com",
        "--commission-type",
        "percent",
        "--commission-rate",
        "20",
    )
    assert result.exit_code == 0, result.output
    program = Program.objects.get()
    api_key = re.search(r"live: (aff_\S+)", result.stdout).group(1)
    assert ProgramKey.objects.get(program=program, mode="live").masked.endswith(api_key[-4:])
    assert f"Created program #{program.pk} Acme" in result.stdout

    result = svc("programs")
    assert result.exit_code == 0 and "Acme" in result.stdout and program.api_token_masked in result.stdout
    assert api_key not in result.stdout

    # svc status and svc test-event with the program key.
    result = svc("status", env={"SVC_API_KEY": api_key})
    assert result.exit_code == 0, result.output
    assert f"Program #{program.pk} Acme" in result.stdout and "Clicks received" in result.stdout
    result = svc("test-event", "--api-key", api_key)
    assert result.exit_code == 0, result.output
    assert "passed" in result.stdout and "sale: event" in result.stdout
    assert "Runs left this hour: 9 of 10" in result.stdout
    status = only_json(svc("status", "--json", env={"SVC_API_KEY": api_key}))
    assert status["data"]["readiness"]["counts"]["test_sales"] == 1

    # svc logout: revoked on the service and gone from disk.
    result = svc("logout")
    assert result.exit_code == 0 and "Logged out." in result.stdout
    assert not (config_dir / "credentials.json").exists()
    assert CliToken.objects.get().revoked_at is not None
    result = svc("programs")
    assert result.exit_code == svc_client.AUTH == 3
    assert "Not logged in" in result.stderr


def test_login_with_json_and_no_browser(svc, account, config_dir):
    browser = Browser("ada")
    call = svc_client.Api.call

    def spy(api, method, path, **kwargs):
        body = call(api, method, path, **kwargs)
        if path.endswith("/auth/start"):
            browser.open(body["data"]["login_url"])  # the person copies the printed link
        return body

    with (
        mock.patch("svc_cli.main.webbrowser.open") as opener,
        mock.patch.object(svc_client.Api, "call", autospec=True, side_effect=spy),
    ):
        result = svc("--json", "login", "--no-browser")
    browser.join()

    assert result.exit_code == 0, result.output
    opener.assert_not_called()
    document = only_json(result)
    assert document["data"]["logged_in"] is True and document["data"]["user"]["username"] == "ada"
    assert "token" not in document["data"]
    assert "Open this link to sign in" in result.stderr
    assert saved(config_dir)["token"].startswith("svcl_")


def test_a_login_cancelled_in_the_browser_exits_3_and_saves_nothing(svc, account, config_dir):
    result, _ = login(svc, action="deny")
    assert result.exit_code == 3
    assert "Sign-in was cancelled in the browser." in result.stderr
    assert not (config_dir / "credentials.json").exists()


def test_a_login_session_that_expires_exits_3(svc, account, config_dir):
    def expire(url: str, *args) -> bool:
        CliLoginSession.objects.update(expires_at=timezone.now())
        return True

    with mock.patch("svc_cli.main.webbrowser.open", side_effect=expire):
        result = svc("login")
    assert result.exit_code == 3
    assert "The sign-in link expired before you signed in." in result.stderr
    assert not (config_dir / "credentials.json").exists()


def test_a_suspended_account_cannot_log_in(svc, account, config_dir):
    account.workspace.is_blocked = True
    account.workspace.save()
    browser = Browser("ada", delay=0)
    done = threading.Event()

    def open_then_expire(url: str, *args) -> bool:
        # The page refuses the suspended account (403), so the session stays pending until it expires.
        browser._sign_in(url)
        done.set()
        CliLoginSession.objects.update(expires_at=timezone.now())
        return True

    with mock.patch("svc_cli.main.webbrowser.open", side_effect=open_then_expire):
        result = svc("login")
    assert done.is_set() and len(browser.errors) == 1  # the confirmation answered 403
    assert result.exit_code == 3
    assert not (config_dir / "credentials.json").exists()


def test_init_prompts_for_what_is_missing(svc, account):
    login(svc)
    result = svc("init", "--commission-rate", "12.5", input="Prompted\nprompted.example.com\nrecurring_percent\n")
    assert result.exit_code == 0, result.output
    program = Program.objects.get()
    assert (program.name, program.domain, program.commission_type) == (
        "Prompted",
        "prompted.example.com",
        "recurring_percent",
    )
    assert str(program.commission_rate) == "12.5000"
    assert "Program name" in result.stderr


def test_an_api_error_exits_1_with_the_services_message(svc, account):
    login(svc)
    result = svc("init", "--no-input", "--name", "Acme", "--domain", "a.example", "--commission-type", "percent",
                 "--commission-rate", "150")  # fmt: skip
    assert result.exit_code == svc_client.API_ERROR == 1
    assert "Error: commission_rate is a percentage for this type and cannot exceed 100" in result.stderr
    assert re.search(r"HTTP 400 · request id [0-9a-f]{32}", result.stderr)
    assert not Program.objects.exists()

    result = svc("init", "--no-input", "--json")
    assert result.exit_code == 1
    error = only_json(result)["error"]
    assert error["message"] == "Missing required fields: name, domain, commission_type, commission_rate"
    assert (error["status"], error["exit_code"]) == (400, 1) and re.fullmatch(r"[0-9a-f]{32}", error["request_id"])


def test_a_forbidden_advertiser_exits_3(svc, account):
    login(svc)
    other = ProgramFactory().workspace
    result = svc("init", "--no-input", "--name", "A", "--domain", "a.example", "--commission-type", "fixed",
                 "--commission-rate", "100", "--advertiser-id", str(other.pk), "--json")  # fmt: skip
    assert result.exit_code == 3
    assert only_json(result)["error"]["message"] == "advertiser_id does not match the authenticated account"


def test_the_programs_json_is_the_services_body(svc, account):
    login(svc)
    program = ProgramFactory(workspace=account.workspace)
    document = only_json(svc("programs", "--json"))
    assert [item["id"] for item in document["data"]] == [program.pk]
    assert only_json(svc("--json", "programs")) == document


def test_a_token_revoked_on_the_service_exits_3_with_a_hint(svc, account):
    login(svc)
    CliToken.objects.update(revoked_at=timezone.now())
    result = svc("programs")
    assert result.exit_code == 3
    assert "Error: Invalid or expired token." in result.stderr and "svc login" in result.stderr
    # Logging out still forgets it.
    assert svc("logout").exit_code == 0


def test_a_login_saved_for_another_service_or_expired_is_not_used(svc, account, config_dir, server):
    login(svc)
    result = svc("programs", "--base-url", "http://127.0.0.1:1")
    assert result.exit_code == 3 and "Not logged in to http://127.0.0.1:1" in result.stderr

    credentials = saved(config_dir)
    credentials["token_expires_at"] = "2000-01-01T00:00:00+00:00"
    (config_dir / "credentials.json").write_text(json.dumps(credentials))
    result = svc("programs")
    assert result.exit_code == 3 and "Your login has expired" in result.stderr


def test_without_a_program_key_status_and_test_event_exit_2(svc):
    for command in ("status", "test-event"):
        result = svc(command)
        assert result.exit_code == svc_client.USAGE == 2
        assert "Missing program API key: pass --api-key or set SVC_API_KEY." in result.stderr


def test_a_wrong_program_key_exits_3(svc):
    result = svc("status", "--api-key", "aff_nope")
    assert result.exit_code == 3 and "Error: Invalid API token" in result.stderr


def test_an_unreachable_service_exits_4(svc, config_dir):
    result = svc("status", "--api-key", "aff_x", "--base-url", UNREACHABLE)
    assert result.exit_code == svc_client.NETWORK == 4
    assert f"Could not reach {UNREACHABLE}" in result.stderr
    result = svc("login", "--no-browser", "--json", env={"SVC_BASE_URL": UNREACHABLE})
    assert result.exit_code == 4 and only_json(result)["error"]["exit_code"] == 4


def test_the_test_event_cap_exits_5_with_the_wait(svc, account):
    program = ProgramFactory(workspace=account.workspace)
    now = timezone.now()
    CliTestRun.objects.bulk_create([CliTestRun(program=program, created_at=now) for _ in range(10)])

    result = svc("test-event", "--api-key", program.raw_api_key)
    assert result.exit_code == svc_client.RATE_LIMITED == 5
    assert "Test event limit reached" in result.stderr and re.search(r"Retry after 3[56]\d\d seconds\.", result.stderr)

    error = only_json(svc("test-event", "--api-key", program.raw_api_key, "--json"))["error"]
    assert error["code"] == "rate_limited" and 3500 < error["retry_after_seconds"] <= 3600


def test_a_failing_chain_exits_6(svc, account):
    program = ProgramFactory(workspace=account.workspace)
    ProgramKey.objects.filter(program=program, mode="test").delete()
    result = svc("test-event", "--api-key", program.raw_api_key)
    assert result.exit_code == svc_client.VERIFICATION_FAILED == 6
    assert "failed" in result.stdout and "The program has no test key" in result.stdout


def test_a_server_failure_exits_1_and_shows_the_request_id(svc, account):
    program = ProgramFactory(workspace=account.workspace)
    with mock.patch("cli_api.api.views.readiness_compute", side_effect=RuntimeError("boom")):
        result = svc("status", "--api-key", program.raw_api_key)
    assert result.exit_code == 1
    request_id = re.search(r"request id ([0-9a-f]{32})", result.stderr).group(1)
    assert f"Failed to get program status (request_id: {request_id})" in result.stderr


def test_the_installed_console_script(server, account, config_dir):
    svc_script = Path(sys.executable).with_name("svc")
    version = subprocess.run([str(svc_script), "--version"], capture_output=True, text=True, timeout=60)
    assert (version.returncode, version.stdout.strip()) == (0, "svc 0.1.0")

    program = ProgramFactory(workspace=account.workspace, name="Scripted")
    config_dir.mkdir()
    (config_dir / "credentials.json").write_text(
        json.dumps({"base_url": server, "token": cli_token_create(user=account.user)[1]})
    )
    env = {**os.environ, "SVC_CONFIG_DIR": str(config_dir), "SVC_BASE_URL": server}
    listed = subprocess.run(
        [str(svc_script), "programs", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert [item["name"] for item in json.loads(listed.stdout)["data"]] == [program.name]

    missing = subprocess.run([str(svc_script), "status"], capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 2


def test_logging_in_again_revokes_the_login_it_replaces(svc, account, config_dir):
    login(svc)
    first = saved(config_dir)["token"]
    result, _ = login(svc)
    assert result.exit_code == 0, result.output
    assert saved(config_dir)["token"] != first
    tokens = CliToken.objects.order_by("pk")
    assert [token.revoked_at is not None for token in tokens] == [True, False]
