"""GET /api/agent/v1/commissions and /commissions/:id: what a key may see, filters, money from the selector,
the refund history, cursor pagination."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from agent_api import messages
from commissions.approval import commission_approve
from commissions.models import Commission, CommissionStatus
from commissions.services import refund_apply
from programs.models import Partner, Program
from tests.agent_api.conftest import agent_for
from tests.factories import CommissionFactory, ProgramFactory, ReferralLinkFactory, WorkspaceFactory
from tests.helpers import platform_error

pytestmark = pytest.mark.django_db

COMMISSIONS = "/api/agent/v1/commissions"


def commission_in(program: Program, partner: Partner | None = None, **fields: Any) -> Commission:
    """A pending commission on a sale of this program (by a new partner unless one is given)."""
    link = ReferralLinkFactory.create(program=program, **({"partner": partner} if partner else {}))
    return CommissionFactory.create(sale__customer__link=link, **fields)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.json()
    return [item["id"] for item in response.json()["data"]]


class TestScopes:
    def test_a_key_without_commissions_read_gets_403_naming_the_scope(self, workspace, program):
        commission = commission_in(program)
        agent = agent_for(workspace, scopes=("payouts:read", "programs:write"))
        for path in (COMMISSIONS, f"{COMMISSIONS}/{commission.pk}"):
            response = agent.get(path)
            assert response.json() == platform_error(
                403,
                "ForbiddenError",
                messages.SCOPE_MISSING.format(scope="commissions:read"),
                "missing_scope",
                {"scope": "commissions:read"},
            )

    def test_write_includes_read(self, workspace, program):
        commission = commission_in(program)
        assert ids(agent_for(workspace, scopes=("commissions:write",)).get(COMMISSIONS)) == [commission.pk]


class TestList:
    def test_an_item_carries_the_sale_the_partner_and_the_money_from_the_selector(self, agent, program):
        commission = commission_in(program, amount_cents=2_000)
        refund_apply(sale=commission.sale, amount=2_500, refund_id="re_1", reason="damaged")
        commission.refresh_from_db()
        [item] = agent.get(COMMISSIONS).json()["data"]
        assert item == {
            "id": commission.pk,
            "program_id": program.pk,
            "partner_id": commission.partner_id,
            "partner_name": commission.partner.name,
            "sale_id": commission.sale_id,
            "transaction_id": commission.sale.processor_event_id,
            "status": "refunded",
            "amount_cents": 2_000,
            # A pending commission partly refunded is cancelled whole: it pays nothing, nothing was clawed back.
            "payable_cents": 0,
            "clawed_back_cents": 0,
            "currency": "USD",
            "hold_until": commission.hold_until.isoformat(),
            "approved_at": None,
            "created_at": commission.created_at.isoformat(),
            "refund_count": 1,
            "refund_reason": "damaged",
            "held_at": None,
            "hold_reason": "",
            "voided_at": None,
            "void_reason": "",
        }

    def test_a_credited_commission_partly_refunded_pays_the_rest(self, agent, program):
        commission = commission_in(program, amount_cents=2_000, hold_until=timezone.now())
        assert commission_approve(commission_id=commission.pk)
        refund_apply(sale=commission.sale, amount=2_500, refund_id="re_1", reason="")
        [item] = agent.get(COMMISSIONS).json()["data"]
        assert (item["status"], item["payable_cents"], item["clawed_back_cents"]) == ("refunded", 1_500, 500)
        assert item["approved_at"] is not None

    def test_other_workspaces_and_programs_outside_a_limited_key_are_absent(self, workspace, program):
        mine = commission_in(program)
        other = commission_in(ProgramFactory.create(workspace=workspace))
        commission_in(ProgramFactory.create(workspace=WorkspaceFactory.create()))
        assert ids(agent_for(workspace).get(COMMISSIONS)) == [other.pk, mine.pk]
        assert ids(agent_for(workspace, programs=(program,)).get(COMMISSIONS)) == [mine.pk]

    def test_filters_by_program_partner_and_status(self, agent, workspace, program):
        first = commission_in(program)
        second = commission_in(program, partner=first.partner, status=CommissionStatus.APPROVED)
        third = commission_in(program)
        elsewhere = commission_in(ProgramFactory.create(workspace=workspace), partner=first.partner)
        assert ids(agent.get(COMMISSIONS, {"program_id": program.pk})) == [third.pk, second.pk, first.pk]
        assert ids(agent.get(COMMISSIONS, {"partner_id": first.partner_id})) == [elsewhere.pk, second.pk, first.pk]
        assert ids(agent.get(COMMISSIONS, {"status": "approved"})) == [second.pk]
        both = {"program_id": program.pk, "partner_id": first.partner_id, "status": "pending"}
        assert ids(agent.get(COMMISSIONS, both)) == [first.pk]
        assert ids(agent.get(COMMISSIONS, {"partner_id": 999_999_999})) == []

    def test_filters_by_creation_time(self, agent, program):
        old = commission_in(program, created_at=datetime(2026, 1, 10, 12, tzinfo=UTC))
        new = commission_in(program, created_at=datetime(2026, 2, 10, 12, tzinfo=UTC))
        assert ids(agent.get(COMMISSIONS, {"created_since": "2026-02-01T00:00:00Z"})) == [new.pk]
        assert ids(agent.get(COMMISSIONS, {"created_until": "2026-01-10"})) == [old.pk]  # the whole day
        assert ids(agent.get(COMMISSIONS, {"created_until": "2026-01-10T11:00:00+00:00"})) == []
        assert ids(agent.get(COMMISSIONS, {"created_since": "2026-01-10", "created_until": "2026-02-10"})) == [
            new.pk,
            old.pk,
        ]

    def test_a_program_the_key_may_not_see_is_404(self, workspace, program):
        other = ProgramFactory.create(workspace=workspace)
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        agent = agent_for(workspace, programs=(program,))
        for program_id in (other.pk, foreign.pk, 999_999_999):
            response = agent.get(COMMISSIONS, {"program_id": program_id})
            assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"status": "credited"}, messages.COMMISSION_STATUS_INVALID),
            ({"partner_id": "abc"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"partner_id": "0"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"partner_id": "99999999999999999999"}, messages.PARTNER_ID_FILTER_INVALID),
            ({"program_id": "1.5"}, messages.PROGRAM_ID_FILTER_INVALID),
            ({"created_since": "yesterday"}, messages.CREATED_SINCE_INVALID),
            ({"created_until": "2026-13-01"}, messages.CREATED_UNTIL_INVALID),
        ],
    )
    def test_a_bad_filter_is_400_naming_it(self, agent, params, message):
        response = agent.get(COMMISSIONS, params)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")

    def test_the_status_message_names_every_state(self):
        assert messages.COMMISSION_STATUS_INVALID.endswith(", ".join(CommissionStatus.values))


class TestCursorPagination:
    def test_pages_cover_every_commission_once(self, workspace, program):
        made = [commission_in(program).pk for _ in range(5)]
        agent = agent_for(workspace)
        seen: list[int] = []
        cursor = None
        while True:
            response = agent.get(COMMISSIONS, {"limit": 2, **({"cursor": cursor} if cursor else {})})
            seen += ids(response)
            cursor = response.json()["next_cursor"]
            if cursor is None:
                break
        assert seen == sorted(made, reverse=True)

    def test_a_page_costs_the_same_queries_whatever_its_size_or_depth(
        self, workspace, program, django_assert_num_queries
    ):
        for _ in range(7):
            commission_in(program)
        agent = agent_for(workspace)
        cursor = agent.get(COMMISSIONS, {"limit": 2}).json()["next_cursor"]
        # the key, the programs it is limited to, the page (partner, sale and money joined in)
        with django_assert_num_queries(3):
            assert len(ids(agent.get(COMMISSIONS, {"limit": 5, "cursor": cursor}))) == 5
        with django_assert_num_queries(3):
            assert len(ids(agent.get(COMMISSIONS, {"limit": 1}))) == 1


class TestGet:
    def test_it_carries_the_ledger_and_the_refund_history(self, agent, program):
        commission = commission_in(program, amount_cents=2_000, hold_until=timezone.now())
        assert commission_approve(commission_id=commission.pk)
        refund_apply(sale=commission.sale, amount=2_500, refund_id="re_1", reason="damaged")
        refund_apply(sale=commission.sale, amount=1_000, refund_id=None, reason="")
        data = agent.get(f"{COMMISSIONS}/{commission.pk}").json()["data"]
        assert (data["id"], data["status"], data["payable_cents"], data["clawed_back_cents"]) == (
            commission.pk,
            "refunded",
            1_300,
            700,
        )
        assert [(e["kind"], e["amount_cents"], e["currency"]) for e in data["ledger"]] == [
            ("credit", 2_000, "USD"),
            ("deduction", -500, "USD"),
            ("deduction", -200, "USD"),
        ]
        refunds = data["refunds"]
        assert {k: v for k, v in refunds.items() if k != "steps"} == {
            "count": 2,
            "sale_refunded_cents": 3_500,
            "deducted_cents": 700,
            "refund_ids": ["re_1"],
            "anonymous_amounts_cents": [1_000],
        }
        assert [(s["step"], s["reason"], s["reversed"], s["was_paid_out"]) for s in refunds["steps"]] == [
            (1, "damaged", False, False),
            (2, "damaged", False, False),
        ]

    def test_a_commission_never_refunded_has_an_empty_history(self, agent, program):
        commission = commission_in(program)
        data = agent.get(f"{COMMISSIONS}/{commission.pk}").json()["data"]
        assert data["ledger"] == []
        assert data["refunds"] == {
            "count": 0,
            "sale_refunded_cents": 0,
            "deducted_cents": 0,
            "refund_ids": [],
            "anonymous_amounts_cents": [],
            "steps": [],
        }

    def test_outside_the_workspace_or_the_limited_programs_is_404(self, workspace, program):
        other = commission_in(ProgramFactory.create(workspace=workspace))
        foreign = commission_in(ProgramFactory.create(workspace=WorkspaceFactory.create()))
        limited = agent_for(workspace, programs=(program,))
        for agent, commission in ((limited, other), (agent_for(workspace), foreign)):
            response = agent.get(f"{COMMISSIONS}/{commission.pk}")
            assert response.json() == platform_error(404, "NotFoundError", messages.COMMISSION_NOT_FOUND, "not_found")
        assert agent_for(workspace).get(f"{COMMISSIONS}/{other.pk}").status_code == 200

    @pytest.mark.parametrize("commission_id", ["abc", "0", "-1", "1.5", "²", "99999999999999999999", "123456789"])
    def test_a_malformed_or_unknown_id_is_404(self, agent, commission_id):
        response = agent.get(f"{COMMISSIONS}/{commission_id}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_a_time_filter_compares_instants_across_offsets(agent, program):
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)
    made = commission_in(program, created_at=at)
    since = (at - timedelta(minutes=30)).astimezone(timezone.get_fixed_timezone(120)).isoformat()  # 13:30+02:00
    assert ids(agent.get(COMMISSIONS, {"created_since": since})) == [made.pk]
