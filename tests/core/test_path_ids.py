"""A path id is ASCII digits and nothing else, on every API that takes one (agent, dashboard, program settings,
CLI). int() reads " 1", "1 ", "+1", "0_1" and "١" as 1, and the old parser stripped spaces, so
`/api/agent/v1/programs/%201` answered program 1. Each malformed form of a real object's id is now the route's
own 404, in its own envelope; a number past a bigint too. Leading zeros are digits and still name the object
(as Django's `<int:>` reads them on the dashboard pages)."""

from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from agent_api import messages as agent_messages
from cli_api.services import cli_token_create
from core import messages
from core.ids import MAX_BIGINT, path_id_text
from programs.models import Program, Role
from tests.agent_api.conftest import Agent, agent_for
from tests.factories import MembershipFactory, PartnerFactory, ProgramFactory
from tests.helpers import bearer, platform_error

pytestmark = pytest.mark.django_db

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def malformed_forms(pk: int) -> list[str]:
    """Path segments that int() (or a parser that strips) reads as `pk`, and numbers no bigint holds."""
    text = str(pk)
    return [
        f" {text}",
        f"{text} ",
        f"\t{text}",
        f"{text}\n",
        f"\u00a0{text}",
        f"+{text}",
        f"0_{text}",
        text.translate(ARABIC_INDIC),
        text.translate(FULL_WIDTH),
        f"{text}²",
        "-" + text,
        "0",
        str(MAX_BIGINT + 1),
        "9" * 40,
    ]


def path(template: str, segment: str) -> str:
    return template.format(id=quote(segment, safe=""))


class TestPathIdText:
    @pytest.mark.parametrize("segment", [*malformed_forms(1), "", "1.0", "1e3", "0x1", "abc"])
    def test_anything_but_ascii_digits_naming_a_bigint_is_empty(self, segment):
        assert path_id_text(segment) == ""

    @pytest.mark.parametrize("segment", ["1", "42", "007", str(MAX_BIGINT)])
    def test_ascii_digits_pass_as_they_are(self, segment):
        assert path_id_text(segment) == segment


@pytest.fixture
def program() -> Program:
    return ProgramFactory.create()


@pytest.fixture
def owner(program):
    return MembershipFactory(workspace=program.workspace, role=Role.OWNER).user


class TestAgentApi:
    @pytest.fixture
    def agent(self, program) -> Agent:
        return agent_for(program.workspace)

    @pytest.fixture
    def objects(self, program):
        return {"program": program, "partner": PartnerFactory(workspace=program.workspace)}

    ROUTES = [
        ("/api/agent/v1/programs/{id}", "program", agent_messages.PROGRAM_NOT_FOUND),
        ("/api/agent/v1/programs/{id}/performance", "program", agent_messages.PROGRAM_NOT_FOUND),
        ("/api/agent/v1/programs/{id}/fraud-rules", "program", agent_messages.PROGRAM_NOT_FOUND),
        ("/api/agent/v1/partners/{id}", "partner", agent_messages.PARTNER_NOT_FOUND),
    ]

    @pytest.mark.parametrize(("template", "kind", "message"), ROUTES)
    def test_a_malformed_path_id_is_the_typed_404(self, agent, objects, template, kind, message):
        pk = objects[kind].pk
        assert agent.get(path(template, str(pk))).status_code == 200
        for segment in malformed_forms(pk):
            response = agent.get(path(template, segment))
            assert response.status_code == 404, (segment, response.content)
            assert response.json() == platform_error(404, "NotFoundError", message, code=agent_messages.CODE_NOT_FOUND)

    def test_leading_zeros_still_name_the_object(self, agent, program):
        response = agent.get(f"/api/agent/v1/programs/00{program.pk}")
        assert response.status_code == 200
        assert response.json()["data"]["id"] == program.pk

    def test_a_malformed_id_on_a_write_changes_nothing(self, agent, program):
        for segment in malformed_forms(program.pk)[:3]:
            response = agent.client.post(path("/api/agent/v1/commissions/{id}/approve", segment), {}, format="json")
            assert response.status_code == 404
            assert response.json()["error"]["message"] == agent_messages.COMMISSION_NOT_FOUND


class TestDashboardAndProgramApis:
    @pytest.mark.parametrize(
        "template",
        [
            "/api/tracking/status/{id}",
            "/api/tracking/events/{id}",
            "/api/tracking/performance/{id}",
            "/api/tracking/readiness/{id}",
            "/api/tracking/explain/{id}",
            "/api/tracking/logs/{id}",
            "/api/v1/programs/{id}/settings",
        ],
    )
    def test_a_malformed_path_id_is_program_not_found(self, api_client, owner, program, template):
        api_client.force_login(owner)
        assert api_client.get(path(template, str(program.pk))).status_code in (200, 400)
        for segment in malformed_forms(program.pk):
            response = api_client.get(path(template, segment))
            assert response.status_code == 404, (segment, response.content)
            assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND)

    def test_regenerating_through_a_malformed_id_keeps_the_key(self, api_client, owner, program):
        api_client.force_login(owner)
        digest = program.keys.get(mode="live").digest
        for segment in malformed_forms(program.pk)[:3]:
            response = api_client.post(path("/api/programs/{id}/regenerate-key", segment))
            assert response.status_code == 404
            assert response.json()["error"]["message"] == messages.PROGRAM_NOT_FOUND
        assert program.keys.get(mode="live").digest == digest


class TestCliApi:
    def test_a_malformed_path_id_is_program_not_found(self, owner, program):
        client = APIClient()
        client.credentials(**bearer(cli_token_create(user=owner)[1]))
        template = "/api/v1/cli/programs/{id}/webhook-events"
        assert client.get(path(template, str(program.pk))).status_code == 200
        for segment in malformed_forms(program.pk):
            response = client.get(path(template, segment))
            assert response.status_code == 404, (segment, response.content)
            assert response.json()["error"]["message"] == messages.PROGRAM_NOT_FOUND


def test_agent_program_with_a_leading_space_is_not_program_one(program):
    """The report: `/api/agent/v1/programs/%201` answered program 1."""
    agent = agent_for(program.workspace)
    response = agent.get(f"/api/agent/v1/programs/%20{program.pk}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
