"""GET /api/agent/v1/programs/:id/flagged-clicks (events:read): the clicks the fraud rules marked, newest first,
by kind and partner, in pages of one query; never the IP or the whole visitor hash. The events list's click items
say how each click counted too. (A click keeps no IP: only the visitor hash, of which an item shows the start.)"""

from typing import Any

import pytest

from agent_api import messages
from programs.models import Partner, Program, ReferralLink
from tests.agent_api.conftest import agent_for
from tests.factories import PartnerFactory, ProgramFactory, ReferralLinkFactory, WorkspaceFactory
from tests.helpers import platform_error
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db

VISITOR = "0123456789abcdef0123456789abcdef"
KIND_INVALID = messages.FLAGGED_KIND_INVALID.format(known="duplicate, bot, prefetch, paid_ads")


def flagged_of(program: Program) -> str:
    return f"/api/agent/v1/programs/{program.pk}/flagged-clicks"


def link_of(program: Program, partner: Partner | None = None) -> ReferralLink:
    partner = partner or PartnerFactory.create(workspace=program.workspace)
    return ReferralLinkFactory.create(program=program, partner=partner)


def click(link: ReferralLink, n: int, **fields: Any) -> ClickEvent:
    assert link.program_id is not None
    return ClickEvent.objects.create(
        program_id=link.program_id, partner=link.partner, link=link, click_id=f"clk_{link.pk}_{n}", **fields
    )


def ids(response) -> list[int]:
    assert response.status_code == 200, response.json()
    return [item["id"] for item in response.json()["data"]]


@pytest.fixture
def marked(program) -> dict[str, ClickEvent]:
    """One click of each kind on one link, and a counted click that no rule marked."""
    link = link_of(program)
    return {
        "counted": click(link, 1),
        "duplicate": click(link, 2, traffic="duplicate", visitor_hash=VISITOR),
        "bot": click(link, 3, traffic="bot", user_agent="Googlebot/2.1"),
        "prefetch": click(link, 4, traffic="prefetch"),
        "paid_ads": click(link, 5, flags=["paid_ads"]),
    }


class TestList:
    def test_it_lists_the_marked_clicks_newest_first_without_the_counted_ones(self, agent, program, marked):
        assert ids(agent.get(flagged_of(program))) == [
            marked[kind].pk for kind in ("paid_ads", "prefetch", "bot", "duplicate")
        ]

    def test_an_item_says_how_the_click_was_marked_and_never_shows_the_whole_visitor_hash(self, agent, program, marked):
        duplicate = marked["duplicate"]
        duplicate.device_type, duplicate.browser_name, duplicate.geo_country = "mobile", "Chrome Mobile", "DE"
        duplicate.save()
        response = agent.get(flagged_of(program), {"kind": "duplicate"})
        assert response.json()["data"] == [
            {
                "id": duplicate.pk,
                "click_id": duplicate.click_id,
                "link": duplicate.link.short_link,
                "partner_id": duplicate.partner_id,
                "traffic": "duplicate",
                "flags": [],
                "visitor": VISITOR[:8],
                "device_type": "mobile",
                "browser_name": "Chrome Mobile",
                "geo_country": "DE",
                "is_test": False,
                "created_at": duplicate.created_at.isoformat(),
            }
        ]
        assert VISITOR not in response.content.decode()

    @pytest.mark.parametrize("kind", ["duplicate", "bot", "prefetch", "paid_ads"])
    def test_it_filters_by_kind(self, agent, program, marked, kind):
        assert ids(agent.get(flagged_of(program), {"kind": kind})) == [marked[kind].pk]

    def test_a_duplicate_click_flagged_for_paid_ads_is_both_kinds(self, agent, program):
        both = click(link_of(program), 1, traffic="duplicate", flags=["paid_ads"])
        assert ids(agent.get(flagged_of(program), {"kind": "duplicate"})) == [both.pk]
        assert ids(agent.get(flagged_of(program), {"kind": "paid_ads"})) == [both.pk]

    def test_it_filters_by_partner(self, agent, program, marked):
        other = click(link_of(program), 9, traffic="bot")
        assert ids(agent.get(flagged_of(program), {"partner_id": other.partner_id})) == [other.pk]
        both = {"partner_id": marked["bot"].partner_id, "kind": "bot"}
        assert ids(agent.get(flagged_of(program), both)) == [marked["bot"].pk]

    def test_other_programs_clicks_are_not_listed(self, agent, workspace, program, marked):
        click(link_of(ProgramFactory.create(workspace=workspace)), 1, traffic="bot")
        assert len(ids(agent.get(flagged_of(program)))) == 4

    def test_pages_cover_every_marked_click_once(self, agent, program, marked):
        seen: list[int] = []
        params: dict[str, Any] = {"limit": 3}
        while True:
            body = agent.get(flagged_of(program), params).json()
            seen += [item["id"] for item in body["data"]]
            if body["next_cursor"] is None:
                break
            params = {"limit": 3, "cursor": body["next_cursor"]}
        assert seen == [marked[kind].pk for kind in ("paid_ads", "prefetch", "bot", "duplicate")]

    def test_a_page_costs_the_same_queries_whatever_its_size_or_depth(self, agent, program, django_assert_num_queries):
        for n in range(8):
            click(link_of(program), n, traffic="bot")
        cursor = agent.get(flagged_of(program), {"limit": 2}).json()["next_cursor"]
        # the key, the programs it is limited to, the program, the page (links joined in)
        with django_assert_num_queries(4):
            assert len(ids(agent.get(flagged_of(program), {"limit": 5, "cursor": cursor}))) == 5
        with django_assert_num_queries(4):
            assert len(ids(agent.get(flagged_of(program), {"limit": 1}))) == 1


class TestRefusals:
    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"kind": "human"}, KIND_INVALID),
            (
                {"kind": "self_referral"},
                KIND_INVALID,
            ),
            ({"partner_id": "x"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"partner_id": "0"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"limit": "1000"}, messages.LIMIT_INVALID),
            ({"cursor": "nope"}, messages.CURSOR_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, program, params, message):
        response = agent.get(flagged_of(program), params)
        assert response.json() == platform_error(400, "BadRequestError", message, messages.CODE_BAD_REQUEST)

    def test_it_needs_events_read(self, workspace, program):
        response = agent_for(workspace, scopes=("programs:write", "commissions:write")).get(flagged_of(program))
        assert response.json() == platform_error(
            403,
            "ForbiddenError",
            messages.SCOPE_MISSING.format(scope="events:read"),
            "missing_scope",
            {"scope": "events:read"},
        )
        assert agent_for(workspace, scopes=("events:read",)).get(flagged_of(program)).status_code == 200

    def test_a_program_outside_the_key_is_404(self, workspace, program):
        sibling = ProgramFactory.create(workspace=workspace)
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        click(link_of(foreign), 1, traffic="bot")
        limited = agent_for(workspace, programs=(program,))
        for agent, target in ((agent_for(workspace), foreign), (limited, sibling)):
            response = agent.get(flagged_of(target))
            assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")


def test_the_events_list_says_how_each_click_counted(agent, program, marked):
    items = agent.get("/api/agent/v1/events", {"type": "click"}).json()["data"]
    by_id = {item["id"]: (item["traffic"], item["flags"]) for item in items}
    assert by_id == {
        marked["counted"].pk: ("", []),
        marked["duplicate"].pk: ("duplicate", []),
        marked["bot"].pk: ("bot", []),
        marked["prefetch"].pk: ("prefetch", []),
        marked["paid_ads"].pk: ("", ["paid_ads"]),
    }
