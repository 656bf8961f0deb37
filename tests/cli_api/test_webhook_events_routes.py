"""GET /api/v1/cli/programs/{id}/webhook-events (what `svc listen` polls) and POST …/webhook-events/trigger
(`svc trigger`): login token only, the program's own events after a cursor, and synthetic events."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from cli_api import messages
from core import messages as core_messages
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.helpers import bad_request, platform_error
from webhooks import messages as webhook_messages
from webhooks.events import event_new
from webhooks.listen import LISTEN_SETTLE
from webhooks.models import EventType, WebhookEvent
from webhooks.payloads import EXAMPLE_DATA

from .conftest import bearer

pytestmark = pytest.mark.django_db


def events_url(program_id: object) -> str:
    return f"/api/v1/cli/programs/{program_id}/webhook-events"


def trigger_url(program_id: object) -> str:
    return f"/api/v1/cli/programs/{program_id}/webhook-events/trigger"


def event(program, type_: str = EventType.SALE_CREATED, *, livemode: bool = True, age_seconds: float = 5):
    """A stored event, `age_seconds` old (older than the settle time unless asked otherwise)."""
    made = event_new(program_id=program.pk, type=type_, livemode=livemode, data={"amount_cents": 4900}, object_id=7)
    made.created_at = timezone.now() - timedelta(seconds=age_seconds)
    made.save(force_insert=True)
    return made


def listed(response) -> list[tuple[int, str]]:
    return [(item["cursor"], item["event"]["id"]) for item in response.json()["data"]]


def test_it_answers_only_the_current_cursor_without_after(api_client, login_token, program):
    assert api_client.get(events_url(program.pk), **bearer(login_token)).json() == {
        "data": [],
        "meta": {"cursor": 0, "has_more": False},
    }
    event(program)
    newest = event(program, EventType.LEAD_CREATED)
    event(ProgramFactory())  # another program's: not its cursor

    response = api_client.get(events_url(program.pk), **bearer(login_token))

    assert response.status_code == 200
    assert response.json() == {"data": [], "meta": {"cursor": newest.pk, "has_more": False}}


def test_it_lists_live_and_test_events_after_the_cursor_oldest_first_as_envelopes(api_client, login_token, program):
    first = event(program)
    second = event(program, EventType.COMMISSION_CREATED, livemode=False)
    third = event(program, EventType.LEAD_CREATED)
    event(ProgramFactory())

    response = api_client.get(events_url(program.pk), {"after": str(first.pk)}, **bearer(login_token))

    assert response.status_code == 200
    body = response.json()
    assert body["data"] == [
        {"cursor": second.pk, "event": second.payload()},
        {"cursor": third.pk, "event": third.payload()},
    ]
    assert body["data"][0]["event"]["livemode"] is False
    assert body["data"][1]["event"]["data"] == {"id": 7, "amount_cents": 4900}
    assert body["meta"] == {"cursor": third.pk, "has_more": False}
    # From the cursor given back: nothing new.
    again = api_client.get(events_url(program.pk), {"after": str(third.pk)}, **bearer(login_token)).json()
    assert again == {"data": [], "meta": {"cursor": third.pk, "has_more": False}}


def test_it_holds_back_events_younger_than_the_settle_time_and_never_moves_the_cursor_past_one(
    api_client, login_token, program, time_machine
):
    settled = event(program)
    young = event(program, age_seconds=0)
    # Older by its clock, but inserted after the young one: still behind it in the stream.
    after_young = event(program, age_seconds=10)

    first = api_client.get(events_url(program.pk), {"after": "0"}, **bearer(login_token)).json()

    assert listed_ids(first) == [settled.public_id]
    assert first["meta"]["cursor"] == settled.pk
    time_machine.move_to(timezone.now() + LISTEN_SETTLE + timedelta(seconds=1))
    later = api_client.get(events_url(program.pk), {"after": str(settled.pk)}, **bearer(login_token)).json()
    assert listed_ids(later) == [young.public_id, after_young.public_id]


def listed_ids(body: dict[str, Any]) -> list[str]:
    return [item["event"]["id"] for item in body["data"]]


def test_it_filters_by_type_and_moves_the_cursor_past_the_events_left_out(api_client, login_token, program):
    sale = event(program, EventType.SALE_CREATED)
    event(program, EventType.COMMISSION_CREATED)
    lead = event(program, EventType.LEAD_CREATED)
    last = event(program, EventType.REFUND_APPLIED)

    response = api_client.get(
        events_url(program.pk), {"after": "0", "types": "lead.created, sale.created"}, **bearer(login_token)
    )

    assert response.status_code == 200
    assert listed(response) == [(sale.pk, sale.public_id), (lead.pk, lead.public_id)]
    assert response.json()["meta"]["cursor"] == last.pk


def test_it_pages_with_limit_and_says_when_more_follow(api_client, login_token, program):
    made = [event(program) for _ in range(3)]

    page = api_client.get(events_url(program.pk), {"after": "0", "limit": "2"}, **bearer(login_token)).json()
    assert listed_ids(page) == [made[0].public_id, made[1].public_id]
    assert page["meta"] == {"cursor": made[1].pk, "has_more": True}
    rest = api_client.get(events_url(program.pk), {"after": str(made[1].pk), "limit": "2"}, **bearer(login_token))
    assert rest.json()["meta"] == {"cursor": made[2].pk, "has_more": False}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"types": "sale.created,sale.made"}, webhook_messages.EVENT_TYPE_UNKNOWN.format(type="sale.made")),
        ({"after": "-1"}, messages.LISTEN_AFTER_INVALID),
        ({"after": "²"}, messages.LISTEN_AFTER_INVALID),
        ({"after": "9" * 30}, messages.LISTEN_AFTER_INVALID),
        ({"after": "0", "limit": "0"}, messages.LISTEN_LIMIT_INVALID),
        ({"after": "0", "limit": "101"}, messages.LISTEN_LIMIT_INVALID),
    ],
)
def test_it_refuses_a_bad_query(api_client, login_token, program, query, message):
    response = api_client.get(events_url(program.pk), query, **bearer(login_token))

    assert response.status_code == 400
    assert response.json() == bad_request(message)


def test_it_takes_the_login_token_only(api_client, program):
    missing = api_client.get(events_url(program.pk))
    assert missing.status_code == 401
    assert missing.json() == platform_error(401, "UnauthorizedError", messages.INIT_AUTH_REQUIRED)
    for key in (program.raw_api_key, program.raw_test_api_key):
        for response in (
            api_client.get(events_url(program.pk), **bearer(key)),
            api_client.post(trigger_url(program.pk), {"type": "sale.created"}, format="json", **bearer(key)),
        ):
            assert response.status_code == 401
            assert response.json() == platform_error(401, "UnauthorizedError", messages.INIT_INVALID_TOKEN)
    assert not WebhookEvent.objects.exists()


@pytest.mark.parametrize("program_id", ["other", "999999", "²", "0"])
def test_it_answers_404_for_a_program_the_account_cannot_see(api_client, login_token, program_id):
    stranger = ProgramFactory()
    event(stranger)
    target = stranger.pk if program_id == "other" else program_id
    not_found = platform_error(404, "NotFoundError", core_messages.PROGRAM_NOT_FOUND)

    listing = api_client.get(events_url(target), {"after": "0"}, **bearer(login_token))
    triggered = api_client.post(trigger_url(target), {"type": "sale.created"}, format="json", **bearer(login_token))

    assert (listing.status_code, listing.json()) == (404, not_found)
    assert (triggered.status_code, triggered.json()) == (404, not_found)
    assert WebhookEvent.objects.count() == 1


def test_it_lets_a_member_listen_but_only_owners_and_admins_trigger(api_client, account, login_token):
    shared = ProgramFactory(workspace=MembershipFactory(user=account.user, role=Role.MEMBER).workspace)
    left = ProgramFactory(workspace=MembershipFactory(user=account.user, role=Role.OWNER, is_active=False).workspace)

    assert api_client.get(events_url(shared.pk), **bearer(login_token)).status_code == 200
    refused = api_client.post(trigger_url(shared.pk), {"type": "sale.created"}, format="json", **bearer(login_token))
    assert refused.status_code == 403
    assert refused.json() == platform_error(403, "ForbiddenError", core_messages.PERMISSION_DENIED)
    # An inactive membership sees nothing.
    assert api_client.get(events_url(left.pk), **bearer(login_token)).status_code == 404
    assert not WebhookEvent.objects.exists()


def test_it_triggers_a_synthetic_test_event_that_listening_then_sees(
    api_client, login_token, program, django_capture_on_commit_callbacks, time_machine
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            trigger_url(program.pk), {"type": "commission.approved"}, format="json", **bearer(login_token)
        )

    assert response.status_code == 201
    stored = WebhookEvent.objects.get()
    assert (stored.program_id, stored.type, stored.livemode, stored.synthetic) == (
        program.pk,
        "commission.approved",
        False,
        True,
    )
    assert response.json() == {"data": {"cursor": stored.pk, "event": stored.payload()}}
    assert response.json()["data"]["event"]["data"] == {"id": 0, **EXAMPLE_DATA[EventType.COMMISSION_APPROVED]}
    time_machine.move_to(timezone.now() + LISTEN_SETTLE + timedelta(seconds=1))
    page = api_client.get(events_url(program.pk), {"after": "0"}, **bearer(login_token)).json()
    assert listed_ids(page) == [stored.public_id]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"type": "sale.made"},
            webhook_messages.TRIGGER_TYPE_UNKNOWN.format(type="sale.made", known=", ".join(EventType.values)),
        ),
        ({}, messages.TRIGGER_TYPE_REQUIRED),
        ({"type": 3}, messages.TRIGGER_TYPE_REQUIRED),
        ([], messages.TRIGGER_TYPE_REQUIRED),
    ],
)
def test_it_refuses_a_trigger_without_a_known_type_and_writes_nothing(api_client, login_token, program, body, message):
    response = api_client.post(trigger_url(program.pk), body, format="json", **bearer(login_token))

    assert response.status_code == 400
    assert response.json() == bad_request(message)
    assert not WebhookEvent.objects.exists()


def test_it_counts_listening_in_its_own_bucket(api_client, login_token, program):
    listening = api_client.get(events_url(program.pk), **bearer(login_token))
    triggering = api_client.post(
        trigger_url(program.pk), {"type": "sale.created"}, format="json", **bearer(login_token)
    )

    assert listening["X-RateLimit-Limit"] == "120"
    assert triggering["X-RateLimit-Limit"] == "60"
    assert triggering["X-RateLimit-Remaining"] == "59"
