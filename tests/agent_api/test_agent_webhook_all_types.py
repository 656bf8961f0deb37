"""event_types is documented as a list of types or "*" (docs/webhooks.md): the bare string "*" is taken on create
and on change, and kept as the model keeps it (["*"]); any other bare string is still refused as before (issue 37,
item 7b). The OpenAPI description says both forms."""

import pytest

from tests.factories import WebhookEndpointFactory
from webhooks import messages as webhook_messages
from webhooks.models import ALL_EVENT_TYPES, WebhookEndpoint

pytestmark = pytest.mark.django_db

ENDPOINTS = "/api/agent/v1/webhooks/endpoints"
URL = "https://hooks.example.com/svc"


def test_create_takes_the_bare_star_as_every_type(agent, program):
    response = agent.client.post(
        ENDPOINTS, {"program_id": program.pk, "url": URL, "event_types": ALL_EVENT_TYPES}, format="json"
    )
    assert response.status_code == 201, response.content
    assert WebhookEndpoint.objects.get().event_types == ["*"]
    assert response.json()["data"]["event_types"] == ["*"]


def test_change_takes_the_bare_star_as_every_type(agent, program):
    endpoint = WebhookEndpointFactory.create(program=program, event_types=["sale.created"])
    response = agent.client.patch(f"{ENDPOINTS}/{endpoint.pk}", {"event_types": "*"}, format="json")
    assert response.status_code == 200, response.content
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["*"] and response.json()["data"]["event_types"] == ["*"]


@pytest.mark.parametrize("bare", ["sale.created", "", " *", "*,sale.created", "all"])
def test_any_other_bare_string_is_refused_as_before(agent, program, bare):
    response = agent.client.post(ENDPOINTS, {"program_id": program.pk, "url": URL, "event_types": bare}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == webhook_messages.EVENT_TYPES_REQUIRED
    endpoint = WebhookEndpointFactory.create(program=program, event_types=["sale.created"])
    change = agent.client.patch(f"{ENDPOINTS}/{endpoint.pk}", {"event_types": bare}, format="json")
    assert change.status_code == 400
    assert change.json()["error"]["message"] == webhook_messages.EVENT_TYPES_REQUIRED
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["sale.created"]


def test_the_openapi_description_says_a_list_or_the_bare_star(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    for name in ("AgentWebhookEndpointCreate", "PatchedAgentWebhookEndpointUpdate"):
        field = schema["components"]["schemas"][name]["properties"]["event_types"]
        forms = field["oneOf"]
        assert {"type": "array", "items": {"type": "string"}, "minItems": 1} in forms, name
        assert {"type": "string", "enum": ["*"]} in forms, name
        assert '"*"' in field["description"], name
