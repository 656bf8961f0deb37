"""The billing framework, whatever the platform: connections and their secrets, the webhook URL, events stored and
processed once, rotation with overlap, the sweep. A stand-in reader (signature = the secret itself in a header)
keeps these tests about the framework; each platform's own scheme is tested in its test_<platform>.py."""

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection as db_connection
from django.utils import timezone

from billing import platforms
from billing.events import billing_events_stale
from billing.models import BillingConnection, BillingEvent
from billing.platforms.base import Delivery, Refused, SetupGuide, Verified
from billing.services import (
    ConnectionDetails,
    billing_event_store,
    billing_events_replay,
    connection_create,
    connection_deactivate,
    connection_secret_rotate,
)
from core.errors import BadRequestError
from tests.billing.conftest import connect, webhook_path
from tests.factories import ProgramFactory
from tracking.payments import Outcome, ignored

SECRET = "first-secret-0123456789"


class StandInReader:
    guide = SetupGuide(where="", secret_label="Secret", events=(), docs="")

    def __init__(self) -> None:
        self.handled: list[int] = []

    def verify(self, connection: BillingConnection, delivery: Delivery, secrets: list[str]) -> Verified:
        if delivery.headers.get("x-secret") not in secrets:
            raise Refused("bad signature")
        try:
            body = json.loads(delivery.body)
        except ValueError:
            raise Refused("Invalid payload", signature=False) from None
        return Verified(event_id=body["id"], event_type=body["type"], payload=body)

    def handle(self, event: BillingEvent) -> Outcome:
        self.handled.append(event.pk)
        return ignored(f"{event.event_type} handled")

    def carried_attribution(self, payload: dict[str, Any]) -> bool | None:
        return None


@pytest.fixture
def reader(monkeypatch) -> StandInReader:
    stand_in = StandInReader()
    monkeypatch.setitem(platforms.READERS, "paddle", stand_in)
    return stand_in


def _post(client, connection: BillingConnection, body: dict[str, Any], secret: str = SECRET):
    return client.post(
        webhook_path(connection), data=json.dumps(body), content_type="application/json", HTTP_X_SECRET=secret
    )


@pytest.mark.django_db
def test_the_secret_is_stored_encrypted_and_shown_only_by_its_last_characters():
    connection = connect(ProgramFactory(), "paddle", SECRET)
    assert SECRET not in connection.secret_encrypted
    assert connection.secret_hint == "…6789"
    assert len(connection.token) >= 32


@pytest.mark.django_db
def test_an_event_is_processed_once_and_a_redelivery_is_acknowledged(
    client, reader, django_capture_on_commit_callbacks
):
    connection = connect(ProgramFactory(), "paddle", SECRET)
    with django_capture_on_commit_callbacks(execute=True):
        first = _post(client, connection, {"id": "evt_1", "type": "transaction.completed"})
        again = _post(client, connection, {"id": "evt_1", "type": "transaction.completed"})
    assert (first.status_code, first.json()) == (200, {"received": True})
    assert (again.status_code, again.json()) == (200, {"received": True, "duplicate": True})
    assert len(reader.handled) == 1
    event = BillingEvent.objects.get()
    assert (event.status, event.outcome, event.attempts) == ("ignored", "transaction.completed handled", 1)
    connection.refresh_from_db()
    assert connection.last_event_at is not None


@pytest.mark.django_db
def test_unknown_tokens_platforms_and_switched_off_connections_answer_404(client, reader):
    connection = connect(ProgramFactory(), "paddle", SECRET)
    assert client.post("/webhooks/billing/paddle/nope", data="{}", content_type="application/json").status_code == 404
    assert (
        client.post(
            f"/webhooks/billing/shopify/{connection.token}", data="{}", content_type="application/json"
        ).status_code
        == 404
    )
    # Another platform's URL with this token names no connection.
    assert (
        client.post(
            f"/webhooks/billing/polar/{connection.token}", data="{}", content_type="application/json"
        ).status_code
        == 404
    )
    connection_deactivate(connection=connection)
    assert _post(client, connection, {"id": "evt_1", "type": "x"}).status_code == 404
    assert BillingEvent.objects.count() == 0


@pytest.mark.django_db
def test_a_bad_signature_is_refused_counted_and_stores_nothing(client, reader):
    connection = connect(ProgramFactory(), "paddle", SECRET)
    refused = _post(client, connection, {"id": "evt_1", "type": "x"}, secret="forged")
    assert (refused.status_code, refused.json()) == (400, {"received": False, "error": "bad signature"})
    malformed = client.post(
        webhook_path(connection), data="{not json", content_type="application/json", HTTP_X_SECRET=SECRET
    )
    assert malformed.status_code == 400
    connection.refresh_from_db()
    # Only the signature failure counts: a malformed body signed right is the platform's or the network's doing.
    assert (connection.signature_failures, connection.last_signature_failure) == (1, "bad signature")
    assert BillingEvent.objects.count() == 0
    assert reader.handled == []


@pytest.mark.django_db
def test_another_programs_secret_does_not_open_this_connection(client, reader):
    mine = connect(ProgramFactory(), "paddle", SECRET)
    connect(ProgramFactory(), "paddle", "the-other-programs-secret")
    assert _post(client, mine, {"id": "evt_1", "type": "x"}, secret="the-other-programs-secret").status_code == 400
    assert BillingEvent.objects.count() == 0


@pytest.mark.django_db
def test_rotation_keeps_the_previous_secret_for_the_overlap_then_refuses_it(client, reader, time_machine):
    connection = connect(ProgramFactory(), "paddle", SECRET)
    connection_secret_rotate(connection=connection, secret="second-secret-0123456789", overlap_hours=2)
    assert _post(client, connection, {"id": "evt_old", "type": "x"}, secret=SECRET).status_code == 200
    assert (
        _post(client, connection, {"id": "evt_new", "type": "x"}, secret="second-secret-0123456789").status_code == 200
    )
    time_machine.move_to(timezone.now() + timedelta(hours=2, minutes=1))
    assert _post(client, connection, {"id": "evt_late", "type": "x"}, secret=SECRET).status_code == 400
    connection_secret_rotate(connection=connection, secret="third-secret-0123456789", overlap_hours=0)
    assert _post(client, connection, {"id": "evt_3", "type": "x"}, secret="second-secret-0123456789").status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("platform", "details", "message"),
    [
        ("shopify", ConnectionDetails(secret=SECRET), "platform must be one of"),
        ("paddle", ConnectionDetails(secret="  "), "secret is required"),
        ("paddle", ConnectionDetails(secret="a\x00b"), "secret must be printable"),
        ("paddle", ConnectionDetails(secret=SECRET, environment="prod"), "environment must be live or test"),
        ("chargebee", ConnectionDetails(secret=SECRET), "username is required"),
    ],
)
def test_bad_connection_details_are_refused_and_change_nothing(platform, details, message):
    program = ProgramFactory()
    with pytest.raises(BadRequestError, match=message):
        connection_create(program=program, platform=platform, details=details)
    assert BillingConnection.objects.count() == 0


@pytest.mark.django_db
def test_connecting_again_keeps_the_url_and_turns_the_connection_back_on():
    program = ProgramFactory()
    first = connect(program, "paddle", SECRET)
    connection_deactivate(connection=first)
    again = connect(program, "paddle", "a-new-secret-0123456789")
    assert (again.pk, again.token, again.is_active, again.secret_hint) == (first.pk, first.token, True, "…6789")


@pytest.mark.django_db
def test_a_replay_processes_again_and_the_sweep_finds_events_whose_task_was_lost(
    reader, time_machine, django_capture_on_commit_callbacks
):
    connection = connect(ProgramFactory(), "paddle", SECRET)
    with django_capture_on_commit_callbacks(execute=True):
        stored = billing_event_store(
            connection=connection,
            verified=Verified(event_id="evt_1", event_type="x", payload={}),
            carried_attribution=None,
            now=timezone.now(),
        )
    assert stored.event is not None
    assert reader.handled == [stored.event.pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert billing_events_replay(program=connection.program, event_pks=[stored.event.pk]) == 1
    assert reader.handled == [stored.event.pk, stored.event.pk]
    # Another program's event is never replayed through this one.
    assert billing_events_replay(program=ProgramFactory(), event_pks=[stored.event.pk]) == 0
    BillingEvent.objects.filter(pk=stored.event.pk).update(status="received")
    time_machine.move_to(timezone.now() + timedelta(minutes=3))
    assert billing_events_stale() == [stored.event.pk]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_same_event_delivered_concurrently_is_stored_once(reader):
    connection = connect(ProgramFactory(), "paddle", SECRET)

    def store(_: int) -> bool:
        try:
            return billing_event_store(
                connection=connection,
                verified=Verified(event_id="evt_race", event_type="x", payload={}),
                carried_attribution=None,
                now=timezone.now(),
            ).duplicate
        finally:
            db_connection.close()

    with ThreadPoolExecutor(8) as pool:
        duplicates = list(pool.map(store, range(8)))
    assert sorted(duplicates) == [False] + [True] * 7
    assert BillingEvent.objects.filter(event_id="evt_race").count() == 1


@pytest.mark.django_db
def test_the_replay_command_processes_named_or_failed_events_and_names_what_it_does_not_know(reader):
    from io import StringIO

    from django.core.management import CommandError, call_command

    connection = connect(ProgramFactory(), "paddle", SECRET)
    BillingEvent.objects.create(
        connection=connection,
        program=connection.program,
        platform="paddle",
        event_id="evt_9",
        event_type="x",
        payload={},
        status="failed",
    )
    out = StringIO()
    call_command("billing_replay", "--program", str(connection.program_id), "--failed", stdout=out)
    assert "Queued 1 event(s)" in out.getvalue()
    with pytest.raises(CommandError, match="No stored event of program .*: evt_nope"):
        call_command("billing_replay", "--program", str(connection.program_id), "--event", "evt_nope")
    with pytest.raises(CommandError, match="Name the events"):
        call_command("billing_replay", "--program", str(connection.program_id))
