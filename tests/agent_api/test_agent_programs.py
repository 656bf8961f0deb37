"""GET /api/agent/v1/programs and /programs/:id: what a key may see, the scope it needs, cursor pagination."""

import pytest

from agent_api import messages
from programs.models import Program
from tests.agent_api.conftest import agent_for
from tests.factories import ProgramFactory, WorkspaceFactory
from tests.helpers import platform_error

pytestmark = pytest.mark.django_db

PROGRAMS = "/api/agent/v1/programs"


def ids(response) -> list[int]:
    return [item["id"] for item in response.json()["data"]]


class TestScopes:
    def test_a_key_without_programs_read_gets_403_naming_the_scope(self, workspace, program):
        agent = agent_for(workspace, scopes=("commissions:read",))
        for path in (PROGRAMS, f"{PROGRAMS}/{program.pk}"):
            response = agent.get(path)
            assert response.status_code == 403
            assert response.json() == platform_error(
                403,
                "ForbiddenError",
                messages.SCOPE_MISSING.format(scope="programs:read"),
                "missing_scope",
                {"scope": "programs:read"},
            )

    def test_write_includes_read(self, workspace, program):
        assert agent_for(workspace, scopes=("programs:write",)).get(PROGRAMS).status_code == 200


class TestWhatAKeySees:
    def test_it_lists_the_programs_of_its_workspace_newest_first(self, workspace, program):
        newer = ProgramFactory.create(workspace=workspace)
        ProgramFactory.create(workspace=WorkspaceFactory.create())
        assert ids(agent_for(workspace).get(PROGRAMS)) == [newer.pk, program.pk]

    def test_a_key_limited_to_programs_sees_only_those(self, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        agent = agent_for(workspace, programs=(program,))
        assert ids(agent.get(PROGRAMS)) == [program.pk]
        response = agent.get(f"{PROGRAMS}/{other.pk}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"

    def test_a_program_of_another_workspace_is_not_found(self, workspace, program):
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        response = agent_for(workspace).get(f"{PROGRAMS}/{foreign.pk}")
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")

    @pytest.mark.parametrize("program_id", ["abc", "0", "-1", "1.5", "²", "99999999999999999999"])
    def test_a_malformed_or_unknown_id_is_404(self, agent, program_id):
        assert agent.get(f"{PROGRAMS}/{program_id}").status_code == 404

    def test_one_program_carries_its_settings_and_readiness_verdict(self, agent, program):
        data = agent.get(f"{PROGRAMS}/{program.pk}").json()["data"]
        assert data["id"] == program.pk
        assert data["commission_type"] == program.commission_type
        assert data["api_token_masked"].endswith(program.raw_api_key[-4:])
        assert program.raw_api_key not in str(data)
        assert data["readiness"]["program_id"] == program.pk
        assert {"ready", "status", "next_step", "checks"} <= set(data["readiness"])


class TestCursorPagination:
    def test_pages_cover_every_program_once(self, workspace, program):
        ProgramFactory.create_batch(4, workspace=workspace)
        agent = agent_for(workspace)
        seen: list[int] = []
        cursor = None
        pages = 0
        while True:
            response = agent.get(PROGRAMS, {"limit": 2, **({"cursor": cursor} if cursor else {})})
            assert response.status_code == 200
            seen += ids(response)
            cursor = response.json()["next_cursor"]
            pages += 1
            if cursor is None:
                break
        assert pages == 3
        assert seen == sorted(Program.objects.filter(workspace=workspace).values_list("pk", flat=True), reverse=True)

    def test_a_page_costs_the_same_queries_whatever_its_depth(self, workspace, program, django_assert_num_queries):
        ProgramFactory.create_batch(5, workspace=workspace)
        agent = agent_for(workspace)
        cursor = agent.get(PROGRAMS, {"limit": 3}).json()["next_cursor"]
        # the key, whether it is limited to programs, the page, the page's live keys
        with django_assert_num_queries(4):
            assert len(ids(agent.get(PROGRAMS, {"limit": 3, "cursor": cursor}))) == 3

    @pytest.mark.parametrize("cursor", ["nope", "aWQ6YWJj", "eDox", "", "%%%"])
    def test_a_cursor_it_did_not_issue_is_400(self, agent, cursor):
        response = agent.get(PROGRAMS, {"cursor": cursor})
        assert response.status_code in (200, 400)
        if cursor:
            assert response.json()["error"]["message"] == messages.CURSOR_INVALID
            assert response.json()["error"]["code"] == "invalid_request"

    @pytest.mark.parametrize("limit", ["0", "101", "abc", "-1", "1e3"])
    def test_a_limit_out_of_range_is_400(self, agent, limit):
        response = agent.get(PROGRAMS, {"limit": limit})
        assert response.status_code == 400
        assert response.json()["error"]["message"] == messages.LIMIT_INVALID
