"""Partner invitations through the agent API and its MCP tool: a key with partners:write invites by email (the
portal's one-time link goes to that email only, never into an answer or the audit), partners:read lists a program's
invitations with their status; a key sees only the programs it may."""

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from agent_api.models import AgentAuditEntry
from programs.models import PartnerInvitation
from tests.agent_api.conftest import agent_for
from tests.factories import PartnerFactory, ProgramFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


def invitations(program) -> str:
    return f"/api/agent/v1/programs/{program.pk}/invitations"


def test_a_key_with_partners_write_invites_by_email(workspace, program):
    agent = agent_for(workspace, scopes=("partners:write", "partners:read"))
    response = agent.client.post(invitations(program), {"email": "Pat@Example.com", "name": "Pat"}, format="json")
    assert response.status_code == 201
    data = response.json()["data"]
    invitation = PartnerInvitation.objects.get()
    assert data["id"] == invitation.pk and data["email"] == "pat@example.com" and data["status"] == "pending"
    assert data["program_id"] == program.pk and data["partner_id"] == invitation.partner_id
    [message] = mail.outbox
    link = re.search(r"/portal/invitations/[A-Za-z0-9_-]+", str(message.body))
    assert link is not None
    # The link is the email's alone.
    assert link.group(0) not in response.content.decode()
    audit = AgentAuditEntry.objects.get(action="partner.invite")
    assert link.group(0).rsplit("/", 1)[1] not in str(audit.after)


def test_the_email_of_a_workspace_partner_invites_that_partner(workspace, program):
    partner = PartnerFactory.create(workspace=workspace, email="sam@example.com")
    agent = agent_for(workspace, scopes=("partners:write",))
    response = agent.client.post(invitations(program), {"email": "SAM@example.com"}, format="json")
    assert response.json()["data"]["partner_id"] == partner.pk


def test_scopes(workspace, program):
    reader = agent_for(workspace, scopes=("partners:read",))
    refused = reader.client.post(invitations(program), {"email": "a@example.com"}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["details"] == {"scope": "partners:write"}
    assert agent_for(workspace, scopes=("programs:read",)).get(invitations(program)).status_code == 403
    assert not PartnerInvitation.objects.exists() and not mail.outbox


def test_another_workspaces_program_and_a_program_outside_a_limited_key_are_not_found(workspace, program):
    other = ProgramFactory.create(workspace=WorkspaceFactory.create())
    agent = agent_for(workspace, scopes=("partners:write", "partners:read"))
    for target in (other,):
        assert agent.client.post(invitations(target), {"email": "a@example.com"}, format="json").status_code == 404
        assert agent.get(invitations(target)).status_code == 404
    sibling = ProgramFactory.create(workspace=workspace)
    limited = agent_for(workspace, scopes=("partners:write",), programs=(program,))
    assert limited.client.post(invitations(sibling), {"email": "a@example.com"}, format="json").status_code == 404
    assert not PartnerInvitation.objects.exists() and not mail.outbox


@pytest.mark.parametrize(
    "body",
    [{}, {"email": ""}, {"email": "not an email"}, {"email": "a@example.com", "name": "x" * 201}, {"email": 5}, []],
)
def test_bad_bodies_are_400_and_invite_nobody(workspace, program, body):
    agent = agent_for(workspace, scopes=("partners:write",))
    response = agent.client.post(invitations(program), body, format="json")
    assert response.status_code == 400
    assert not PartnerInvitation.objects.exists() and not mail.outbox


def test_the_list_says_each_invitations_status(workspace, program):
    agent = agent_for(workspace, scopes=("partners:write", "partners:read"))
    for email in ("a@example.com", "b@example.com", "c@example.com"):
        agent.client.post(invitations(program), {"email": email}, format="json")
    a, b, _ = PartnerInvitation.objects.order_by("pk")
    PartnerInvitation.objects.filter(pk=a.pk).update(accepted_at=timezone.now())
    PartnerInvitation.objects.filter(pk=b.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    data = agent.get(invitations(program)).json()["data"]
    assert [(row["email"], row["status"]) for row in data] == [
        ("c@example.com", "pending"),
        ("b@example.com", "expired"),
        ("a@example.com", "accepted"),
    ]
