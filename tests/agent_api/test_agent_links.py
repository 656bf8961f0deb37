"""Referral links through the agent API: list, create, deactivate, each write idempotent and audited."""

import re
from unittest import mock

import pytest
from rest_framework.test import APIClient

from agent_api import messages
from agent_api.models import AgentAuditEntry
from programs import services
from programs.models import PartnerProgram, ReferralLink
from tests.agent_api.conftest import agent_for
from tests.factories import PartnerFactory, PartnerProgramFactory, ProgramFactory, ReferralLinkFactory, WorkspaceFactory
from tests.helpers import platform_error, run_together

pytestmark = pytest.mark.django_db

LINKS = "/api/agent/v1/links"


def post(agent, path, body=None, **headers):
    return agent.client.post(path, body or {}, format="json", **headers)


def deactivate(agent, link, **headers):
    return post(agent, f"{LINKS}/{link.pk}/deactivate", **headers)


def click(client, code: str):
    return client.post("/api/v1/track/click", {"affiliate_url": f"https://shop.example.com/?aff={code}"}, format="json")


@pytest.fixture
def partner(workspace, program):
    partner = PartnerFactory.create(workspace=workspace, name="Ada Lovelace")
    PartnerProgram.objects.create(partner=partner, program=program)
    return partner


class TestScopes:
    def test_reading_needs_links_read_and_writing_links_write(self, workspace, program, partner):
        link = ReferralLinkFactory.create(program=program, partner=partner)
        reader = agent_for(workspace, scopes=("links:read",))
        assert reader.get(LINKS).status_code == 200
        for response in (
            post(reader, LINKS, {"program_id": program.pk, "partner_id": partner.pk}),
            deactivate(reader, link),
        ):
            assert response.status_code == 403
            assert response.json()["error"]["code"] == "missing_scope"
            assert response.json()["error"]["details"] == {"scope": "links:write"}
        refused = agent_for(workspace, scopes=("partners:write",)).get(LINKS)
        assert refused.status_code == 403 and refused.json()["error"]["details"] == {"scope": "links:read"}
        assert ReferralLink.objects.get().is_active and ReferralLink.objects.count() == 1
        assert not AgentAuditEntry.objects.exists()

    def test_links_write_includes_reading(self, workspace, program):
        assert agent_for(workspace, scopes=("links:write",)).get(LINKS).status_code == 200


class TestList:
    def test_it_lists_the_links_of_the_workspace_programs_newest_first(self, agent, workspace, program, partner):
        older = ReferralLinkFactory.create(program=program, partner=partner, short_link="older")
        newer = ReferralLinkFactory.create(program=program, partner=partner, is_active=False)
        ReferralLinkFactory.create(program=program, partner=partner, is_synthetic=True)
        ReferralLinkFactory.create()  # another workspace
        data = agent.get(LINKS).json()["data"]
        assert [link["id"] for link in data] == [newer.pk, older.pk]
        assert data[1] == {
            "id": older.pk,
            "short_link": "older",
            "program_id": program.pk,
            "partner_id": partner.pk,
            "is_active": True,
            "clicks": 0,
            "last_clicked": None,
            "created_at": older.created_at.isoformat(),
        }

    def test_a_limited_key_sees_only_the_links_of_its_programs(self, workspace, program, partner):
        other = ProgramFactory.create(workspace=workspace)
        mine = ReferralLinkFactory.create(program=program, partner=partner)
        ReferralLinkFactory.create(program=other, partner=partner)
        data = agent_for(workspace, programs=(program,)).get(LINKS).json()["data"]
        assert [link["id"] for link in data] == [mine.pk]

    def test_it_filters_by_program_partner_and_state(self, agent, workspace, program, partner):
        other_program = ProgramFactory.create(workspace=workspace)
        other_partner = PartnerFactory.create(workspace=workspace)
        on = ReferralLinkFactory.create(program=program, partner=partner)
        off = ReferralLinkFactory.create(program=program, partner=partner, is_active=False)
        elsewhere = ReferralLinkFactory.create(program=other_program, partner=partner)
        theirs = ReferralLinkFactory.create(program=program, partner=other_partner)

        def ids(**params):
            return [link["id"] for link in agent.get(LINKS, params).json()["data"]]

        assert ids(program_id=program.pk) == [theirs.pk, off.pk, on.pk]
        assert ids(program_id=other_program.pk) == [elsewhere.pk]
        assert ids(partner_id=other_partner.pk) == [theirs.pk]
        assert ids(active="false") == [off.pk]
        assert ids(active="true", partner_id=partner.pk, program_id=program.pk) == [on.pk]

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"program_id": "abc"}, messages.PROGRAM_ID_FILTER_INVALID),
            ({"partner_id": "0"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"active": "yes"}, messages.LINK_ACTIVE_INVALID),
            ({"limit": "0"}, messages.LIMIT_INVALID),
            ({"cursor": "nope"}, messages.CURSOR_INVALID),
        ],
    )
    def test_bad_filters_are_400(self, agent, params, message):
        response = agent.get(LINKS, params)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")

    def test_a_program_the_key_may_not_see_is_404(self, workspace, program):
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        other = ProgramFactory.create(workspace=workspace)
        limited = agent_for(workspace, programs=(program,))
        for agent, program_id in ((agent_for(workspace), foreign.pk), (limited, other.pk)):
            response = agent.get(LINKS, {"program_id": program_id})
            assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")

    def test_pages_cover_every_link_once(self, agent, program, partner):
        made = {ReferralLinkFactory.create(program=program, partner=partner).pk for _ in range(5)}
        seen: list[int] = []
        params: dict[str, object] = {"limit": 2}
        while True:
            body = agent.get(LINKS, params).json()
            seen += [link["id"] for link in body["data"]]
            if body["next_cursor"] is None:
                break
            params["cursor"] = body["next_cursor"]
        assert sorted(seen) == sorted(made) and len(seen) == 5

    @pytest.mark.parametrize("limited", [False, True])
    def test_a_page_costs_the_same_queries(self, workspace, program, partner, limited, django_assert_num_queries):
        for _ in range(4):
            ReferralLinkFactory.create(program=program, partner=partner)
        agent = agent_for(workspace, programs=(program,) if limited else ())
        agent.get(LINKS)
        # the key, whether it is limited, the page, then the clicks (tracking.rollups.link_click_counts: the
        # watermarks, the counters, the clicks not on them yet, the watermarks again)
        with django_assert_num_queries(3 + 4):
            assert len(agent.get(LINKS, {"limit": 3}).json()["data"]) == 3
        # the key, whether it is limited, the program, the page, the clicks
        with django_assert_num_queries(4 + 4):
            assert len(agent.get(LINKS, {"limit": 2, "program_id": program.pk}).json()["data"]) == 2


class TestCreate:
    def test_it_creates_the_link_and_audits_it(self, agent, program, partner):
        response = post(agent, LINKS, {"program_id": program.pk, "partner_id": partner.pk, "short_link": "Ada_2026-x"})
        assert response.status_code == 201
        link = ReferralLink.objects.get()
        data = response.json()["data"]
        assert (data["id"], data["short_link"], data["program_id"], data["partner_id"], data["is_active"]) == (
            link.pk,
            "Ada_2026-x",
            program.pk,
            partner.pk,
            True,
        )
        assert (link.program, link.partner, link.is_active, link.is_synthetic) == (program, partner, True, False)
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == ("link.create", "link", str(link.pk))
        assert entry.before is None and entry.after == data

    def test_it_generates_a_readable_short_link_when_absent(self, agent, program, partner):
        for body in ({}, {"short_link": None}):
            response = post(agent, LINKS, {"program_id": program.pk, "partner_id": partner.pk, **body})
            assert response.status_code == 201
            assert re.fullmatch(r"ada-lovelace-[0-9a-f]{6}", response.json()["data"]["short_link"])
        assert ReferralLink.objects.count() == 2

    def test_the_new_link_takes_clicks(self, agent, api_client, program, partner):
        post(agent, LINKS, {"program_id": program.pk, "partner_id": partner.pk, "short_link": "ada"})
        assert click(api_client, "ada").status_code == 200
        listed = agent.get(LINKS).json()["data"]
        assert [(row["short_link"], row["clicks"]) for row in listed] == [("ada", 1)]

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, messages.PROGRAM_ID_INVALID),
            ({"program_id": "abc", "partner_id": 1}, messages.PROGRAM_ID_INVALID),
            ({"program_id": True, "partner_id": 1}, messages.PROGRAM_ID_INVALID),
            ({"program_id": "P", "partner_id": None}, messages.LINK_PARTNER_ID_INVALID),
            ({"program_id": "P", "partner_id": "x"}, messages.LINK_PARTNER_ID_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": ""}, messages.LINK_SHORT_LINK_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": "x" * 101}, messages.LINK_SHORT_LINK_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": "has space"}, messages.LINK_SHORT_LINK_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": " ada"}, messages.LINK_SHORT_LINK_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": "ädä"}, messages.LINK_SHORT_LINK_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": "a?aff=b"}, messages.LINK_SHORT_LINK_INVALID),
            ({"program_id": "P", "partner_id": "A", "short_link": 123}, messages.LINK_SHORT_LINK_INVALID),
        ],
    )
    def test_bad_input_is_400_and_changes_nothing(self, agent, program, partner, body, message):
        ids = {"P": program.pk, "A": partner.pk}
        body = {key: ids[value] if isinstance(value, str) and value in ids else value for key, value in body.items()}
        response = post(agent, LINKS, body)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")
        assert not ReferralLink.objects.exists() and not AgentAuditEntry.objects.exists()

    def test_a_partner_not_enrolled_is_400_telling_to_enroll_first(self, agent, workspace, program):
        loose = PartnerFactory.create(workspace=workspace)
        response = post(agent, LINKS, {"program_id": program.pk, "partner_id": loose.pk})
        message = messages.LINK_PARTNER_NOT_ENROLLED.format(partner_id=loose.pk)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")
        assert f"/partners/{loose.pk}/enrollments" in message
        assert not ReferralLink.objects.exists() and not AgentAuditEntry.objects.exists()
        # enrolled in another program of the workspace is not enough either
        PartnerProgram.objects.create(partner=loose, program=ProgramFactory.create(workspace=workspace))
        assert post(agent, LINKS, {"program_id": program.pk, "partner_id": loose.pk}).status_code == 400

    def test_a_program_or_partner_outside_the_key_is_404(self, workspace, program, partner):
        foreign_program = ProgramFactory.create(workspace=WorkspaceFactory.create())
        foreign_partner = PartnerProgramFactory.create(program=foreign_program).partner
        agent = agent_for(workspace)
        response = post(agent, LINKS, {"program_id": foreign_program.pk, "partner_id": foreign_partner.pk})
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")
        response = post(agent, LINKS, {"program_id": program.pk, "partner_id": foreign_partner.pk})
        assert response.json() == platform_error(404, "NotFoundError", messages.PARTNER_NOT_FOUND, "not_found")
        other = ProgramFactory.create(workspace=workspace)
        limited = agent_for(workspace, programs=(program,))
        assert post(limited, LINKS, {"program_id": other.pk, "partner_id": partner.pk}).status_code == 404
        assert not ReferralLink.objects.exists()

    def test_a_taken_short_link_is_409(self, agent, program, partner):
        ReferralLinkFactory.create(short_link="ada")  # another workspace's: codes are global
        response = post(agent, LINKS, {"program_id": program.pk, "partner_id": partner.pk, "short_link": "ada"})
        assert response.json() == platform_error(
            409, "ConflictError", messages.LINK_SHORT_LINK_TAKEN, "short_link_taken", {"short_link": "ada"}
        )
        assert ReferralLink.objects.count() == 1 and not AgentAuditEntry.objects.exists()

    def test_the_unique_constraint_decides_a_race(self, agent, program, partner):
        """A link made between the caller's checks and its insert: the constraint, not a read, refuses it."""
        real_create = ReferralLink.objects.create

        def racing_create(**fields):
            ReferralLink(short_link=fields["short_link"]).save()  # another request's insert
            return real_create(**fields)

        with mock.patch.object(ReferralLink.objects, "create", side_effect=racing_create):
            response = post(agent, LINKS, {"program_id": program.pk, "partner_id": partner.pk, "short_link": "ada"})
        assert (response.status_code, response.json()["error"]["code"]) == (409, "short_link_taken")
        # The racing insert ran inside this request's transaction here, so the rollback takes it too.
        assert not ReferralLink.objects.exists() and not AgentAuditEntry.objects.exists()

    def test_a_generated_collision_is_retried(self, agent, program, partner):
        ReferralLinkFactory.create(short_link="ada-lovelace-aaaaaa")
        with mock.patch.object(services.secrets, "token_hex", side_effect=["aaaaaa", "bbbbbb"]):
            response = post(agent, LINKS, {"program_id": program.pk, "partner_id": partner.pk})
        assert response.json()["data"]["short_link"] == "ada-lovelace-bbbbbb"

    def test_a_retry_with_the_same_idempotency_key_creates_one_link(self, agent, program, partner):
        body = {"program_id": program.pk, "partner_id": partner.pk}
        first = post(agent, LINKS, body, HTTP_IDEMPOTENCY_KEY="link-1")
        again = post(agent, LINKS, body, HTTP_IDEMPOTENCY_KEY="link-1")
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        assert ReferralLink.objects.count() == 1 and AgentAuditEntry.objects.count() == 1
        other = post(agent, LINKS, {**body, "short_link": "x"}, HTTP_IDEMPOTENCY_KEY="link-1")
        assert other.json()["error"]["code"] == "idempotency_conflict"


class TestDeactivate:
    def test_it_turns_the_link_off_so_clicks_on_it_are_refused(self, agent, api_client, program, partner):
        link = ReferralLinkFactory.create(program=program, partner=partner)
        assert click(api_client, link.short_link).status_code == 200  # now in tracking's link cache
        response = deactivate(agent, link)
        assert response.status_code == 200
        data = response.json()["data"]
        assert (data["id"], data["is_active"], data["clicks"]) == (link.pk, False, 1)
        link.refresh_from_db()
        assert not link.is_active
        refused = click(api_client, link.short_link)
        assert (refused.status_code, refused.json()["error"]["code"]) == (410, "link_disabled")
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == ("link.deactivate", "link", str(link.pk))
        assert (entry.before["is_active"], entry.after) == (True, data)

    def test_deactivating_an_inactive_link_is_200_and_changes_nothing(self, agent, program, partner):
        link = ReferralLinkFactory.create(program=program, partner=partner, is_active=False)
        response = deactivate(agent, link)
        assert response.status_code == 200 and response.json()["data"]["is_active"] is False
        entry = AgentAuditEntry.objects.get()
        assert entry.before == entry.after == response.json()["data"]

    def test_a_link_outside_the_key_is_404(self, workspace, program, partner):
        other = ProgramFactory.create(workspace=workspace)
        outside = ReferralLinkFactory.create(program=other, partner=partner)
        foreign = ReferralLinkFactory.create()
        synthetic = ReferralLinkFactory.create(program=program, partner=partner, is_synthetic=True)
        limited = agent_for(workspace, programs=(program,))
        for agent, link in ((limited, outside), (agent_for(workspace), foreign), (limited, synthetic)):
            response = deactivate(agent, link)
            assert response.json() == platform_error(404, "NotFoundError", messages.LINK_NOT_FOUND, "not_found")
        for path in (f"{LINKS}/abc/deactivate", f"{LINKS}/0/deactivate", f"{LINKS}/{10**30}/deactivate"):
            assert post(limited, path).status_code == 404
        assert ReferralLink.objects.filter(is_active=True).count() == 3
        assert not AgentAuditEntry.objects.exists()

    def test_a_replayed_deactivation_is_audited_once(self, agent, program, partner):
        link = ReferralLinkFactory.create(program=program, partner=partner)
        first = deactivate(agent, link, HTTP_IDEMPOTENCY_KEY="off-1")
        again = deactivate(agent, link, HTTP_IDEMPOTENCY_KEY="off-1")
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        assert AgentAuditEntry.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_of_one_short_link_make_one_link(workspace, program):
    partner = PartnerFactory.create(workspace=workspace)
    PartnerProgram.objects.create(partner=partner, program=program)
    agent = agent_for(workspace)

    def send(_: int) -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent.raw_key}")
        body = {"program_id": program.pk, "partner_id": partner.pk, "short_link": "same"}
        return client.post(LINKS, body, format="json").status_code

    assert sorted(run_together(4, send)) == [201, 409, 409, 409]
    assert ReferralLink.objects.count() == 1 and AgentAuditEntry.objects.count() == 1
