"""Partners through the agent API: list, create, update, enroll, each write idempotent and audited."""

import pytest

from agent_api import messages
from agent_api.models import AgentAuditEntry
from programs.models import Partner, PartnerProgram
from tests.agent_api.conftest import agent_for
from tests.factories import PartnerFactory, PartnerProgramFactory, ProgramFactory, WorkspaceFactory
from tests.helpers import platform_error

pytestmark = pytest.mark.django_db

PARTNERS = "/api/agent/v1/partners"


def post(agent, path, body, **headers):
    return agent.client.post(path, body, format="json", **headers)


class TestScopes:
    def test_reading_needs_partners_read_and_writing_partners_write(self, workspace, program):
        reader = agent_for(workspace, scopes=("partners:read",))
        assert reader.get(PARTNERS).status_code == 200
        response = post(reader, PARTNERS, {"name": "Ada"})
        assert response.status_code == 403
        assert response.json()["error"]["details"] == {"scope": "partners:write"}
        assert agent_for(workspace, scopes=("programs:read",)).get(PARTNERS).status_code == 403
        assert not Partner.objects.exists()


class TestList:
    def test_it_lists_the_workspace_partners_with_their_visible_programs(self, workspace, program):
        enrolled = PartnerProgramFactory.create(program=program, partner__workspace=workspace).partner
        loose = PartnerFactory.create(workspace=workspace)
        PartnerFactory.create(workspace=WorkspaceFactory.create())
        data = agent_for(workspace).get(PARTNERS).json()["data"]
        assert [(p["id"], p["program_ids"]) for p in data] == [(loose.pk, []), (enrolled.pk, [program.pk])]

    def test_a_limited_key_sees_only_partners_of_its_programs(self, workspace, program):
        other_program = ProgramFactory.create(workspace=workspace)
        mine = PartnerProgramFactory.create(program=program, partner__workspace=workspace).partner
        PartnerProgramFactory.create(program=other_program, partner__workspace=workspace)
        both = PartnerProgramFactory.create(program=program, partner__workspace=workspace).partner
        PartnerProgram.objects.create(partner=both, program=other_program)
        data = agent_for(workspace, programs=(program,)).get(PARTNERS).json()["data"]
        assert [(p["id"], p["program_ids"]) for p in data] == [(both.pk, [program.pk]), (mine.pk, [program.pk])]

    def test_it_filters_by_program(self, workspace, program):
        other_program = ProgramFactory.create(workspace=workspace)
        PartnerProgramFactory.create(program=other_program, partner__workspace=workspace)
        mine = PartnerProgramFactory.create(program=program, partner__workspace=workspace).partner
        data = agent_for(workspace).get(PARTNERS, {"program_id": program.pk}).json()["data"]
        assert [p["id"] for p in data] == [mine.pk]

    def test_a_page_costs_the_same_queries(self, workspace, program, django_assert_num_queries):
        for _ in range(4):
            PartnerProgramFactory.create(program=program, partner__workspace=workspace)
        agent = agent_for(workspace)
        agent.get(PARTNERS)
        # the key, whether it is limited, the page, the page's enrolments
        with django_assert_num_queries(4):
            assert len(agent.get(PARTNERS, {"limit": 3}).json()["data"]) == 3


class TestCreate:
    def test_it_creates_a_partner_and_audits_it(self, agent, workspace, program):
        response = post(agent, PARTNERS, {"name": "  Ada  ", "email": "ada@example.com", "program_id": program.pk})
        assert response.status_code == 201
        data = response.json()["data"]
        partner = Partner.objects.get()
        assert (data["id"], data["name"], data["program_ids"]) == (partner.pk, "Ada", [program.pk])
        assert (
            partner.workspace == workspace and PartnerProgram.objects.filter(partner=partner, program=program).exists()
        )
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == ("partner.create", "partner", str(partner.pk))
        assert entry.before is None and entry.after == data
        assert entry.key_masked.endswith(agent.raw_key[-4:])

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, messages.TEXT_INVALID.format(field="name", limit=200)),
            ({"name": ""}, messages.TEXT_INVALID.format(field="name", limit=200)),
            ({"name": "x" * 201}, messages.TEXT_INVALID.format(field="name", limit=200)),
            ({"name": "Ada", "email": "not-an-email"}, messages.EMAIL_INVALID),
            ({"name": "Ada", "program_id": "abc"}, messages.PROGRAM_ID_INVALID),
        ],
    )
    def test_bad_input_is_400_and_changes_nothing(self, agent, body, message):
        response = post(agent, PARTNERS, body)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")
        assert not Partner.objects.exists() and not AgentAuditEntry.objects.exists()

    def test_a_program_of_another_workspace_is_404(self, agent):
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        assert post(agent, PARTNERS, {"name": "Ada", "program_id": foreign.pk}).status_code == 404
        assert not Partner.objects.exists()

    def test_a_limited_key_must_enroll_the_new_partner(self, workspace, program):
        agent = agent_for(workspace, programs=(program,))
        response = post(agent, PARTNERS, {"name": "Ada"})
        assert response.json()["error"]["message"] == messages.LIMITED_KEY_NEEDS_PROGRAM
        assert post(agent, PARTNERS, {"name": "Ada", "program_id": program.pk}).status_code == 201


class TestUpdateAndEnroll:
    def test_it_updates_name_and_email_with_before_and_after(self, agent, workspace):
        partner = PartnerFactory.create(workspace=workspace, name="Old", email="old@example.com")
        response = agent.client.patch(f"{PARTNERS}/{partner.pk}", {"name": "New"}, format="json")
        assert response.status_code == 200 and response.json()["data"]["name"] == "New"
        entry = AgentAuditEntry.objects.get()
        assert (entry.before["name"], entry.after["name"], entry.after["email"]) == ("Old", "New", "old@example.com")

    def test_an_empty_patch_is_400(self, agent, workspace):
        partner = PartnerFactory.create(workspace=workspace)
        response = agent.client.patch(f"{PARTNERS}/{partner.pk}", {}, format="json")
        assert response.json()["error"]["message"] == messages.PARTNER_PATCH_EMPTY

    def test_a_partner_of_another_workspace_is_404(self, agent):
        foreign = PartnerFactory.create(workspace=WorkspaceFactory.create())
        response = agent.client.patch(f"{PARTNERS}/{foreign.pk}", {"name": "x"}, format="json")
        assert response.json() == platform_error(404, "NotFoundError", messages.PARTNER_NOT_FOUND, "not_found")

    def test_enrolling_twice_is_201_then_200(self, agent, workspace, program):
        partner = PartnerFactory.create(workspace=workspace)
        path = f"{PARTNERS}/{partner.pk}/enrollments"
        first = post(agent, path, {"program_id": program.pk})
        assert (first.status_code, first.json()["data"]["created"]) == (201, True)
        second = post(agent, path, {"program_id": program.pk})
        assert (second.status_code, second.json()["data"]["created"]) == (200, False)
        assert PartnerProgram.objects.filter(partner=partner).count() == 1
        assert [e.after["program_ids"] for e in AgentAuditEntry.objects.order_by("pk")] == [[program.pk]] * 2


def test_one_partner_is_read_with_its_visible_programs(agent, workspace, program):
    partner = PartnerProgramFactory.create(program=program, partner__workspace=workspace).partner
    data = agent.get(f"{PARTNERS}/{partner.pk}").json()["data"]
    assert (data["id"], data["program_ids"]) == (partner.pk, [program.pk])
    foreign = PartnerFactory.create(workspace=WorkspaceFactory.create())
    assert agent.get(f"{PARTNERS}/{foreign.pk}").status_code == 404
    assert agent_for(workspace, scopes=("links:read",)).get(f"{PARTNERS}/{partner.pk}").status_code == 403
