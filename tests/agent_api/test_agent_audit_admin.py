"""Operators read the agent audit trail in admin; nobody can add, change or delete an entry there."""

import pytest

from agent_api.models import AgentAuditEntry

pytestmark = pytest.mark.django_db


def test_operators_read_the_audit_trail_but_cannot_change_it(admin_client, agent):
    agent.client.post("/api/agent/v1/partners", {"name": "Ada"}, format="json")
    entry = AgentAuditEntry.objects.get()
    changelist = admin_client.get("/admin/agent_api/agentauditentry/")
    assert changelist.status_code == 200 and b"partner.create" in changelist.content
    page = admin_client.get(f"/admin/agent_api/agentauditentry/{entry.pk}/change/")
    assert page.status_code == 200 and b"Ada" in page.content
    assert agent.raw_key.encode() not in page.content
    assert admin_client.get("/admin/agent_api/agentauditentry/add/").status_code == 403
    assert admin_client.post(f"/admin/agent_api/agentauditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AgentAuditEntry.objects.count() == 1
