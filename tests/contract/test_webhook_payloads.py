"""The events a program's webhooks receive, made by the real flows (the tracking API, refunds, the agent API) and
by `svc trigger`, have the shape docs/webhooks.md shows for their type: the same keys at every level, each value
of the documented JSON type (a documented null admits any type, as a null in the event admits the documented one)."""

import json
import re
from typing import Any

import pytest
from django.conf import settings

from payouts.models import Payout
from webhooks.models import EventType, WebhookEvent

from .cases import Case
from .world import World

pytestmark = pytest.mark.django_db

DOC = (settings.BASE_DIR / "docs" / "webhooks.md").read_text()
SAMPLES = {sample["type"]: sample for sample in map(json.loads, re.findall(r"```json\n(.*?)\n```", DOC, re.S))}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def shape_differences(documented: Any, sent: Any, where: str = "") -> list[str]:
    """Where `sent` differs from the documented sample in keys or value types (recursively)."""
    kinds = {json_type(documented), json_type(sent)}
    if "null" in kinds:
        return []
    if len(kinds) > 1:
        return [f"{where or '(event)'}: documented {json_type(documented)}, sent {json_type(sent)}"]
    if isinstance(documented, dict):
        differences = [f"{where}.{key}: sent, not documented" for key in sorted(set(sent) - set(documented))]
        differences += [f"{where}.{key}: documented, not sent" for key in sorted(set(documented) - set(sent))]
        for key in sorted(set(documented) & set(sent)):
            differences += shape_differences(documented[key], sent[key], f"{where}.{key}")
        return differences
    if isinstance(documented, list) and documented and sent:
        return [d for item in sent for d in shape_differences(documented[0], item, f"{where}[]")]
    return []


def test_the_doc_has_a_sample_of_every_event_type():
    assert set(SAMPLES) == set(EventType.values)


def every_event_type_happens(world: World) -> None:
    """The flows that emit each type, through the API a program or an agent calls."""
    for case in (
        Case(
            "POST",
            "/api/v1/track/lead",
            200,
            "",
            "program_key",
            body=lambda w: {"click_id": w.ids["click_id"], "customer_key": "lead-webhook", "email": "a@example.com"},
        ),
        Case(
            "POST",
            "/api/v1/track/sale",
            200,
            "",
            "program_key",
            body=lambda w: {"transaction_id": "txn_hook", "amount_cents": 10_000, "customer_key": "lead-webhook"},
        ),
        Case(
            "POST",
            "/api/v1/track/refund",
            200,
            "",
            "program_key",
            body={"transaction_id": "txn_hook", "refund_amount_cents": 2_500, "refund_id": "re_1"},
        ),
        Case(
            "POST",
            "/api/v1/track/refund",
            200,
            "",
            "program_key",
            body={"transaction_id": "txn_hook", "refund_id": "re_2"},
        ),
        Case("POST", "/api/agent/v1/commissions/{commission_id}/approve", 200, "", "agent"),
        Case(
            "POST",
            "/api/agent/v1/partners/{partner_id}/enrollments",
            201,
            "",
            "agent",
            body=lambda w: {"program_id": w.ids["program2"]},
        ),
        # The world's open USD payout bounces (payout.failed); the EUR run is confirmed (payout.created) and its
        # payout paid (payout.paid).
        Case(
            "POST",
            "/api/agent/v1/payouts/payouts/{payout_id}/mark-failed",
            200,
            "",
            "agent",
            body={"message": "The PayPal account is closed"},
        ),
        Case("POST", "/api/agent/v1/payouts/runs/{run_id}/confirm", 200, "", "agent"),
        Case(
            "POST",
            "/api/agent/v1/payouts/payouts/{payout_id}/mark-paid",
            200,
            "",
            "agent",
            url="/api/agent/v1/payouts/payouts/{payout_eur}/mark-paid",
            body={"reference": "PAYPAL-1"},
            before=lambda w: w.ids.__setitem__("payout_eur", Payout.objects.get(run_id=w.ids["run"]).pk),
        ),
        # The partner moved to the world's other group (partner.group_changed).
        Case(
            "POST",
            "/api/agent/v1/programs/{program_id}/partners/{partner_id}/group-changes",
            201,
            "",
            "agent",
            body=lambda w: {"group_id": w.ids["group"]},
        ),
    ):
        response = case.send(world)
        assert response.status_code == case.status, (case.method, case.path, response.content[:400])


def test_the_events_the_flows_send_have_the_documented_shape(world: World):
    every_event_type_happens(world)
    events = list(WebhookEvent.objects.exclude(pk=world.ids["event"]).order_by("pk"))
    assert {event.type for event in events} == set(EventType.values)
    differences = {
        f"{event.type} #{event.pk}": found
        for event in events
        if (found := shape_differences(SAMPLES[event.type], event.payload()))
    }
    assert differences == {}


TRIGGERED = list(EventType.values)


@pytest.mark.parametrize("event_type", TRIGGERED)
def test_a_triggered_event_has_the_documented_shape(world: World, event_type: str):
    response = Case(
        "POST", "/api/v1/cli/programs/{program_id}/webhook-events/trigger", 201, "", "cli", body={"type": event_type}
    ).send(world)
    assert response.status_code == 201, response.content
    assert shape_differences(SAMPLES[event_type], response.json()["data"]["event"]) == []
