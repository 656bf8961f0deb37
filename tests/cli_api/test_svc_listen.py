"""`svc listen` and `svc trigger` against a live test server. The forwarding tests run the installed `svc` script
in a subprocess (a listener is a long-running process) and a local receiver (http.server in a thread) that checks
every delivery with the standardwebhooks library and the secret listen printed."""

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from standardwebhooks.webhooks import Webhook
from typer.testing import CliRunner

from cli_api.services import cli_token_create
from programs.models import Role
from svc_cli import main as svc_main
from svc_cli.main import app, session_secret_generate
from tests.factories import MembershipFactory, ProgramFactory
from tests.webhook_receiver import Received, Receiver, Reply, receiving
from webhooks import messages as webhook_messages
from webhooks.listen import LISTEN_SETTLE
from webhooks.models import EventType, WebhookEvent
from webhooks.services import event_trigger

pytestmark = pytest.mark.django_db(transaction=True)

WAIT_SECONDS = 30
SVC_SCRIPT = Path(sys.executable).with_name("svc")


@pytest.fixture
def server(live_server, settings) -> str:
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


@pytest.fixture
def config_dir(tmp_path, server, account) -> Path:
    """A saved login of the account for the live server, as `svc login` leaves it."""
    directory = tmp_path / "svc-config"
    directory.mkdir()
    token = cli_token_create(user=account.user)[1]
    (directory / "credentials.json").write_text(json.dumps({"base_url": server, "token": token}))
    return directory


@pytest.fixture
def svc(server, config_dir):
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None):
        environment = {
            "SVC_CONFIG_DIR": str(config_dir),
            "SVC_BASE_URL": server,
            "SVC_PROGRAM": None,
            "COLUMNS": "250",
            **(env or {}),
        }
        return runner.invoke(app, list(args), env=environment, catch_exceptions=False)

    return invoke


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A local app answering 204 unless scripted; it trusts the listener's secret once listen prints it."""
    with receiving(default=Reply(status=204, body=b"")) as app_:
        yield app_


class Listener:
    """`svc listen` in a subprocess, its stdout read line by line."""

    def __init__(self, server: str, config_dir: Path, *args: str) -> None:
        env = {
            **os.environ,
            "SVC_CONFIG_DIR": str(config_dir),
            "SVC_BASE_URL": server,
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "250",
        }
        env.pop("SVC_PROGRAM", None)
        self.process = subprocess.Popen(
            [str(SVC_SCRIPT), "listen", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if text in line:
                return line
        self.process.kill()
        raise AssertionError(f"listen never printed {text!r}: {self.seen} {self.process.stderr.read()}")  # type: ignore[union-attr]

    def finish(self) -> tuple[int, list[str], str]:
        try:
            code = self.process.wait(timeout=WAIT_SECONDS)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self.process.stdout.close()  # type: ignore[union-attr]
        time.sleep(0.1)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code, self.seen, self.process.stderr.read()  # type: ignore[union-attr]


def started(server: str, config_dir: Path, receiver: Receiver, *args: str) -> Listener:
    listener = Listener(server, config_dir, "--forward-to", receiver.url, "--interval", "0.2", *args)
    ready = listener.wait_for("Ready! Your webhook signing secret is ")
    secret = ready.split("secret is ")[1].split(" ")[0]
    assert secret.startswith("whsec_")
    receiver.trust(secret)
    return listener


def verified_on_arrival(request: Received, receiver: Receiver) -> bool:
    """Whether the request verified under the listener's secret as it came: one that came before listen printed its
    secret was verified under none."""
    [secret] = receiver.secrets
    return request.verified == {secret: True}


def test_it_forwards_a_real_sale_signed_with_the_session_secret(server, config_dir, receiver, account, program):
    listener = started(server, config_dir, receiver, "--events", "sale.created", "--max-events", "1")

    # A real chain through the tracking API (click, lead, sale in test mode), after listen has started.
    chain = httpx.post(
        f"{server}/api/v1/cli/test-event", headers={"Authorization": f"Bearer {program.raw_test_api_key}"}
    )
    assert chain.status_code == 200 and chain.json()["data"]["success"], chain.text

    code, lines, errors = listener.finish()
    assert code == 0, errors
    sale = WebhookEvent.objects.get(program=program, type=EventType.SALE_CREATED)
    assert WebhookEvent.objects.filter(program=program).exclude(type=EventType.SALE_CREATED).exists()
    [delivery] = receiver.requests  # lead.created and commission.created were left out
    assert verified_on_arrival(delivery, receiver)
    assert delivery.headers["webhook-id"] == sale.public_id
    assert json.loads(delivery.body) == sale.payload()
    assert abs(int(delivery.headers["webhook-timestamp"]) - time.time()) < WAIT_SECONDS
    [line] = [line for line in lines if sale.public_id in line]
    assert "sale.created" in line and "(test)" in line and line.endswith("-> 204")


def test_it_forwards_triggered_events_and_goes_on_after_a_failing_answer(
    server, config_dir, receiver, svc, account, program
):
    receiver.script(Reply(status=500))
    listener = started(server, config_dir, receiver, "--max-events", "2", "--program", str(program.pk))

    first = svc("trigger", "lead.created", "--program", str(program.pk))
    second = svc("trigger", "sale.created", "--program", str(program.pk), "--json")

    assert first.exit_code == 0, first.output
    lead = WebhookEvent.objects.get(type=EventType.LEAD_CREATED)
    assert first.stdout.strip() == f"Triggered lead.created {lead.public_id} (test mode) on program #{program.pk}."
    sale = WebhookEvent.objects.get(type=EventType.SALE_CREATED)
    assert json.loads(second.stdout) == {"data": {"cursor": sale.pk, "event": sale.payload()}}
    code, lines, errors = listener.finish()
    assert code == 0, errors
    assert [delivery.payload() for delivery in receiver.requests] == [lead.payload(), sale.payload()]
    assert all(verified_on_arrival(delivery, receiver) for delivery in receiver.requests)
    forwarded = [line for line in lines if "-> " in line]
    assert len(forwarded) == 2
    assert lead.public_id in forwarded[0] and forwarded[0].endswith("-> 500")
    assert sale.public_id in forwarded[1] and forwarded[1].endswith("-> 204")


def test_it_prints_a_forward_it_could_not_make_and_listens_on(svc, program, monkeypatch):
    """In-process: the first pause of the poll loop is the moment listen is polling, so events made then are new."""
    made: list[WebhookEvent] = []

    def pause(seconds: float) -> None:
        if not made:
            made.extend(
                event_trigger(program_id=program.pk, event_type=kind) for kind in ("sale.created", "refund.applied")
            )
            time.sleep(LISTEN_SETTLE.total_seconds() + 0.2)
        time.sleep(0.05)

    monkeypatch.setattr(svc_main, "_pause", pause)
    result = svc("listen", "--forward-to", "http://127.0.0.1:9/webhooks", "--max-events", "2", "--json")

    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["id"], line["type"]) for line in lines] == [(event.public_id, event.type) for event in made]
    assert all("error" in line and "status" not in line for line in lines)
    assert "Ready! Your webhook signing secret is whsec_" in result.stderr


def test_the_session_secret_is_what_standard_webhooks_libraries_read():
    secret = session_secret_generate()
    assert secret.startswith("whsec_") and secret != session_secret_generate()
    signer = Webhook(secret)
    headers = {"webhook-id": "evt_1", "webhook-timestamp": str(int(time.time()))}
    headers["webhook-signature"] = signer.sign("evt_1", svc_main.datetime.now(svc_main.UTC), "{}")
    assert signer.verify("{}", headers) == {}


def test_trigger_refuses_an_unknown_type_with_the_known_ones(svc, program):
    result = svc("trigger", "sale.made")

    assert result.exit_code == 1
    known = ", ".join(EventType.values)
    assert webhook_messages.TRIGGER_TYPE_UNKNOWN.format(type="sale.made", known=known) in result.stderr
    assert not WebhookEvent.objects.exists()


def test_listen_refuses_an_unknown_event_type_before_it_starts(svc, program):
    result = svc("listen", "--forward-to", "http://127.0.0.1:9/", "--events", "sale.created,sale.made")

    assert result.exit_code == 1
    assert webhook_messages.EVENT_TYPE_UNKNOWN.format(type="sale.made") in result.stderr
    assert "Ready!" not in result.output


def test_the_program_must_be_picked_when_the_account_has_several(svc, account, program):
    other = ProgramFactory(workspace=account.workspace, name="Second")

    result = svc("trigger", "sale.created")
    assert result.exit_code == 2
    assert f"#{program.pk} {program.name}, #{other.pk} Second" in result.stderr
    assert svc("trigger", "sale.created", env={"SVC_PROGRAM": str(other.pk)}).exit_code == 0
    assert WebhookEvent.objects.get().program_id == other.pk


def test_a_member_may_listen_but_not_trigger_and_another_workspaces_program_is_unknown(svc, account):
    shared = ProgramFactory(workspace=MembershipFactory(user=account.user, role=Role.MEMBER).workspace)
    stranger = ProgramFactory()

    refused = svc("trigger", "sale.created", "--program", str(shared.pk))
    unknown = svc("trigger", "sale.created", "--program", str(stranger.pk))
    not_listened = svc("listen", "--forward-to", "http://127.0.0.1:9/", "--program", str(stranger.pk))

    assert refused.exit_code == 3
    assert (unknown.exit_code, not_listened.exit_code) == (1, 1)
    assert "Program not found" in unknown.stderr and "Program not found" in not_listened.stderr
    assert not WebhookEvent.objects.exists()


def test_listen_needs_a_login_and_an_http_address(svc, tmp_path):
    assert svc("listen", "--forward-to", "localhost:3000/webhooks").exit_code == 2
    logged_out = svc("listen", "--forward-to", "http://127.0.0.1:9/", env={"SVC_CONFIG_DIR": str(tmp_path / "none")})
    assert logged_out.exit_code == 3
    assert "Not logged in" in logged_out.stderr
