"""Partner applications through the agent API: partners:read lists a program's, partners:write approves (the
applicant is invited to the portal by email) or rejects; a key sees only the programs it may, and a decision is
made once."""

import pytest
from django.core import mail

from agent_api.models import AgentAuditEntry
from programs.models import PartnerApplication, PartnerInvitation
from tests.agent_api.conftest import agent_for
from tests.factories import ProgramFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


def application(program, email="ann@example.com", **fields) -> PartnerApplication:
    return PartnerApplication.objects.create(
        program=program, name="Ann", email=email, promotion="A newsletter", **fields
    )


def test_a_reader_lists_a_programs_applications_newest_first_by_status(workspace, program):
    first, second = application(program), application(program, email="bob@example.com")
    decided = application(program, email="cy@example.com", status=PartnerApplication.Status.REJECTED)
    reader = agent_for(workspace, scopes=("partners:read",))
    rows = reader.get(f"/api/agent/v1/programs/{program.pk}/applications").json()["data"]
    assert [row["id"] for row in rows] == [decided.pk, second.pk, first.pk]
    pending = reader.get(f"/api/agent/v1/programs/{program.pk}/applications", {"status": "pending"}).json()["data"]
    assert [row["id"] for row in pending] == [second.pk, first.pk]
    assert reader.get(f"/api/agent/v1/programs/{program.pk}/applications", {"status": "x"}).status_code == 400


def test_approval_invites_the_applicant_once(workspace, program):
    pending = application(program)
    writer = agent_for(workspace, scopes=("partners:write",))
    response = writer.client.post(f"/api/agent/v1/applications/{pending.pk}/approve", {}, format="json")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "approved" and data["partner_id"] is not None
    assert PartnerInvitation.objects.get().email == "ann@example.com" and len(mail.outbox) == 1
    assert AgentAuditEntry.objects.filter(action="application.approve").count() == 1
    again = writer.client.post(f"/api/agent/v1/applications/{pending.pk}/reject", {}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "application_decided"
    assert PartnerApplication.objects.get().status == "approved" and len(mail.outbox) == 1


def test_rejection_sends_nothing(workspace, program):
    pending = application(program)
    writer = agent_for(workspace, scopes=("partners:write",))
    response = writer.client.post(f"/api/agent/v1/applications/{pending.pk}/reject", {}, format="json")
    assert response.status_code == 200 and response.json()["data"]["status"] == "rejected"
    assert not mail.outbox and not PartnerInvitation.objects.exists()


def test_scopes_and_what_a_key_may_see(workspace, program):
    pending = application(program)
    reader = agent_for(workspace, scopes=("partners:read",))
    refused = reader.client.post(f"/api/agent/v1/applications/{pending.pk}/approve", {}, format="json")
    assert refused.status_code == 403
    foreign = application(ProgramFactory.create(workspace=WorkspaceFactory.create()), email="x@example.com")
    sibling = application(ProgramFactory.create(workspace=workspace), email="y@example.com")
    writer = agent_for(workspace, scopes=("partners:write",), programs=(program,))
    for target in (foreign, sibling):
        response = writer.client.post(f"/api/agent/v1/applications/{target.pk}/approve", {}, format="json")
        assert response.status_code == 404 and response.json()["error"]["message"] == "Application not found"
    for raw in ("abc", "0", str(2**64)):
        assert writer.client.post(f"/api/agent/v1/applications/{raw}/approve", {}, format="json").status_code == 404
    assert PartnerApplication.objects.filter(status="pending").count() == 3 and not mail.outbox
