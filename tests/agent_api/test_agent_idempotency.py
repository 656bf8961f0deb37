"""Idempotency-Key on agent writes: a retry replays the first response; another body with the same key is 409;
concurrent retries write once."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agent_api import messages
from agent_api.models import AgentAuditEntry, AgentIdempotencyRecord
from agent_api.services import agent_idempotency_records_purge
from programs.models import Partner
from tests.agent_api.conftest import agent_for
from tests.helpers import run_together

pytestmark = pytest.mark.django_db

PARTNERS = "/api/agent/v1/partners"


def create(agent, body, key: str | None = "retry-1"):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return agent.client.post(PARTNERS, body, format="json", **headers)


def test_a_retry_replays_the_first_response_and_writes_once(agent):
    first = create(agent, {"name": "Ada"})
    again = create(agent, {"name": "Ada"})
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert Partner.objects.count() == 1 and AgentAuditEntry.objects.count() == 1
    assert AgentAuditEntry.objects.get().idempotency_key == "retry-1"


def test_the_same_key_with_another_body_is_409(agent):
    create(agent, {"name": "Ada"})
    response = create(agent, {"name": "Grace"})
    assert response.status_code == 409
    assert response.json()["error"] == {
        "status": 409,
        "name": "ConflictError",
        "message": messages.IDEMPOTENCY_CONFLICT,
        "details": {},
        "code": "idempotency_conflict",
    }
    assert Partner.objects.count() == 1


def test_the_body_key_order_does_not_matter(agent, program):
    create(agent, {"name": "Ada", "program_id": program.pk})
    assert create(agent, {"program_id": program.pk, "name": "Ada"})["Idempotent-Replayed"] == "true"


def test_keys_are_per_agent_key(agent, workspace):
    create(agent, {"name": "Ada"})
    assert create(agent_for(workspace), {"name": "Ada"}).status_code == 201
    assert Partner.objects.count() == 2


def test_without_a_key_every_call_writes(agent):
    create(agent, {"name": "Ada"}, key=None)
    create(agent, {"name": "Ada"}, key=None)
    assert Partner.objects.count() == 2 and not AgentIdempotencyRecord.objects.exists()


def test_a_failed_write_is_not_stored_so_a_corrected_retry_runs(agent):
    assert create(agent, {"name": ""}).status_code == 400
    assert not AgentIdempotencyRecord.objects.exists()


@pytest.mark.parametrize("key", ["", "x" * 256, "tab\tkey", "é"])
def test_a_malformed_key_is_400(agent, key):
    response = create(agent, {"name": "Ada"}, key=key)
    assert response.json()["error"]["message"] == messages.IDEMPOTENCY_KEY_INVALID
    assert not Partner.objects.exists()


def test_records_are_purged_after_a_day(agent):
    create(agent, {"name": "Ada"})
    assert agent_idempotency_records_purge(now=timezone.now() + timedelta(hours=23)) == 0
    assert agent_idempotency_records_purge(now=timezone.now() + timedelta(hours=25)) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_write_once(workspace, program):
    agent = agent_for(workspace)

    def send(_: int) -> tuple[int, str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent.raw_key}")
        response = client.post(PARTNERS, {"name": "Ada"}, format="json", HTTP_IDEMPOTENCY_KEY="same")
        return response.status_code, response.json()["data"]["id"]

    results = run_together(4, send)
    assert {status for status, _ in results} == {201}
    assert len({partner_id for _, partner_id in results}) == 1
    assert Partner.objects.count() == 1 and AgentAuditEntry.objects.count() == 1
