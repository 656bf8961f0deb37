"""The Webhooks form takes "*" sent as a single field value (a bare string, as a script's POST sends it), and keeps it
as the model does (["*"]); an unknown bare value is refused with the form's message (issue 37, item 7b)."""

import pytest

from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

HOOK_URL = "https://hooks.example.com/svc"


def test_the_form_takes_the_bare_star(owner_client, program):
    response = owner_client.post(
        f"/programs/{program.pk}/webhooks/new", {"scope": "program", "url": HOOK_URL, "event_types": "*"}
    )
    assert response.status_code == 302, response.content[:500]
    assert WebhookEndpoint.objects.get().event_types == ["*"]


def test_the_edit_form_takes_the_bare_star(owner_client, program):
    owner_client.post(
        f"/programs/{program.pk}/webhooks/new",
        {"scope": "program", "url": HOOK_URL, "event_types": "sale.created"},
    )
    endpoint = WebhookEndpoint.objects.get()
    response = owner_client.post(
        f"/programs/{program.pk}/webhooks/{endpoint.pk}/edit",
        {"url": HOOK_URL, "event_types": "*", "enabled": "on"},
    )
    assert response.status_code == 302, response.content[:500]
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["*"]


def test_the_form_refuses_another_bare_value(owner_client, program):
    response = owner_client.post(
        f"/programs/{program.pk}/webhooks/new", {"scope": "program", "url": HOOK_URL, "event_types": "all"}
    )
    assert response.status_code == 400
    assert not WebhookEndpoint.objects.exists()
