"""GET /api/agent/v1/commissions and /commissions/:id: what a key may see, filters, money from the selector,
the refund history, cursor pagination; what the fraud rules flagged and held, the decisions on a hold, and a
release with its reason."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from agent_api import messages
from agent_api.models import AgentAuditEntry
from commissions.approval import commission_approve
from commissions.models import Commission, CommissionReview, CommissionStatus
from commissions.services import commission_hold, partner_balance, refund_apply
from programs.models import AgentKey, Partner, Program
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
            "kind": "sale",
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
            "flags": [],
            "hold_rule": "",
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


# --- fraud rules: flags, holds and the decisions on them ----------------------------------------------------------

RULES_KNOWN = "duplicate_click, bot, self_referral, paid_ads, sale_velocity, visitor_velocity"


def rule_held(program: Program, rule: str, *flags: str, **fields: Any) -> Commission:
    """A commission a rule held as the sale path leaves it: its flags, the rule, the reason and the review entry."""
    commission = commission_in(
        program, flags=[rule, *flags], hold_rule=rule, held_at=timezone.now(), hold_reason=f"{rule} fired", **fields
    )
    CommissionReview.objects.create(
        commission=commission,
        program=program,
        action=CommissionReview.Action.HELD,
        rule=rule,
        reason=f"{rule} fired",
        actor="rule",
    )
    return commission


def release(agent, commission: Commission, body: Any = None, **headers):
    return agent.client.post(f"{COMMISSIONS}/{commission.pk}/release", body or {}, format="json", **headers)


class TestFraudRules:
    def test_an_item_names_the_rules_that_flagged_its_sale_and_the_one_that_holds_it(self, agent, program):
        held = rule_held(program, "self_referral", "paid_ads")
        flagged = commission_in(program, flags=["paid_ads"])
        by_id = {item["id"]: item for item in agent.get(COMMISSIONS).json()["data"]}
        assert (by_id[held.pk]["flags"], by_id[held.pk]["hold_rule"]) == (
            ["self_referral", "paid_ads"],
            "self_referral",
        )
        assert by_id[held.pk]["hold_reason"] == "self_referral fired"
        assert (by_id[flagged.pk]["flags"], by_id[flagged.pk]["hold_rule"], by_id[flagged.pk]["held_at"]) == (
            ["paid_ads"],
            "",
            None,
        )

    def test_filters_by_hold_by_holding_rule_and_by_flag(self, agent, program):
        by_rule = rule_held(program, "self_referral", "paid_ads")
        by_owner = commission_in(program)
        commission_hold(commission_id=by_owner.pk, reason="checking", actor="user:ann")
        flagged = commission_in(program, flags=["sale_velocity"])
        clean = commission_in(program)
        assert ids(agent.get(COMMISSIONS, {"held": "true"})) == [by_owner.pk, by_rule.pk]
        assert ids(agent.get(COMMISSIONS, {"held": "false"})) == [clean.pk, flagged.pk]
        assert ids(agent.get(COMMISSIONS, {"hold_rule": "self_referral"})) == [by_rule.pk]
        assert ids(agent.get(COMMISSIONS, {"hold_rule": "paid_ads"})) == []
        assert ids(agent.get(COMMISSIONS, {"flagged": "paid_ads"})) == [by_rule.pk]
        assert ids(agent.get(COMMISSIONS, {"flagged": "sale_velocity"})) == [flagged.pk]
        assert ids(agent.get(COMMISSIONS, {"flagged": "sale_velocity", "held": "true"})) == []

    def test_a_released_commission_no_longer_matches_its_rule_but_keeps_its_flags(self, agent, program):
        commission = rule_held(program, "self_referral")
        assert release(agent, commission).status_code == 200
        assert ids(agent.get(COMMISSIONS, {"hold_rule": "self_referral"})) == []
        assert ids(agent.get(COMMISSIONS, {"flagged": "self_referral", "held": "false"})) == [commission.pk]

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"held": "yes"}, messages.HELD_FILTER_INVALID),
            ({"held": "1"}, messages.HELD_FILTER_INVALID),
            ({"hold_rule": "captcha"}, messages.RULE_FILTER_INVALID.format(field="hold_rule", known=RULES_KNOWN)),
            ({"flagged": "SELF_REFERRAL"}, messages.RULE_FILTER_INVALID.format(field="flagged", known=RULES_KNOWN)),
            ({"flagged": '"bot"'}, messages.RULE_FILTER_INVALID.format(field="flagged", known=RULES_KNOWN)),
        ],
    )
    def test_a_bad_fraud_filter_is_400_naming_it(self, agent, params, message):
        response = agent.get(COMMISSIONS, params)
        assert response.json() == platform_error(400, "BadRequestError", message, "invalid_request")

    def test_the_filters_keep_a_page_at_the_same_queries(self, workspace, program, django_assert_num_queries):
        for rule in ("self_referral", "paid_ads", "self_referral"):
            rule_held(program, rule, "bot")
        agent = agent_for(workspace)
        agent.get(COMMISSIONS)  # the key's first use is recorded once
        filters = {"held": "true", "hold_rule": "self_referral", "flagged": "bot", "limit": 1}
        with django_assert_num_queries(3):
            assert len(ids(agent.get(COMMISSIONS, filters))) == 1

    def test_one_commission_carries_every_decision_on_its_hold_oldest_first(self, workspace, program):
        agent = agent_for(workspace)
        commission = rule_held(program, "self_referral", hold_until=timezone.now() + timedelta(days=3))
        assert release(agent, commission, {"reason": "known customer"}).status_code == 200
        held_again = agent.client.post(f"{COMMISSIONS}/{commission.pk}/hold", {"reason": "again"}, format="json")
        assert held_again.status_code == 200
        data = agent.get(f"{COMMISSIONS}/{commission.pk}").json()["data"]
        actor = f"agent key {AgentKey.objects.get().masked}"
        assert [{k: v for k, v in review.items() if k != "created_at"} for review in data["reviews"]] == [
            {"action": "held", "rule": "self_referral", "reason": "self_referral fired", "actor": "rule"},
            {"action": "released", "rule": "self_referral", "reason": "known customer", "actor": actor},
            {"action": "held", "rule": "", "reason": "again", "actor": actor},
        ]
        assert (data["flags"], data["hold_rule"], data["hold_reason"]) == (["self_referral"], "", "again")
        assert all(review["created_at"] for review in data["reviews"])

    def test_a_commission_never_held_has_no_reviews(self, agent, program):
        commission = commission_in(program)
        assert agent.get(f"{COMMISSIONS}/{commission.pk}").json()["data"]["reviews"] == []

    def test_the_detail_costs_the_same_queries_whatever_its_reviews(
        self, workspace, program, django_assert_num_queries
    ):
        agent = agent_for(workspace)
        few, many = rule_held(program, "self_referral"), rule_held(program, "paid_ads")
        for n in range(4):
            CommissionReview.objects.create(
                commission=many, program=program, action="held", reason=str(n), actor="user:ann"
            )
        agent.get(f"{COMMISSIONS}/{few.pk}")  # the key's first use is recorded once
        # the key, the programs it is limited to, the commission, its ledger, its refund steps, its reviews
        for commission in (few, many):
            with django_assert_num_queries(6):
                assert agent.get(f"{COMMISSIONS}/{commission.pk}").status_code == 200


class TestReleaseWithReason:
    def test_a_due_held_commission_is_credited_at_once_with_the_reason_recorded(self, workspace, program):
        agent = agent_for(workspace)
        commission = rule_held(program, "self_referral", hold_until=timezone.now() - timedelta(minutes=1))
        response = release(agent, commission, {"reason": "verified by phone"}, HTTP_IDEMPOTENCY_KEY="rel-1")
        assert response.status_code == 200
        data = response.json()["data"]
        assert (data["status"], data["held_at"], data["hold_rule"], data["flags"]) == (
            "approved",
            None,
            "",
            ["self_referral"],
        )
        assert partner_balance(partner_id=commission.partner_id, currency="USD") == commission.amount_cents
        review = CommissionReview.objects.filter(commission=commission).latest("pk")
        assert (review.action, review.rule, review.reason) == ("released", "self_referral", "verified by phone")
        entry = AgentAuditEntry.objects.get()
        assert entry.before is not None and entry.after is not None
        assert (entry.action, entry.before["hold_rule"], entry.after["status"]) == (
            "commission.release",
            "self_referral",
            "approved",
        )
        replay = release(agent, commission, {"reason": "verified by phone"}, HTTP_IDEMPOTENCY_KEY="rel-1")
        assert replay["Idempotent-Replayed"] == "true" and replay.json() == response.json()
        assert CommissionReview.objects.filter(commission=commission, action="released").count() == 1

    def test_a_commission_still_in_its_hold_period_waits_for_it(self, agent, program):
        commission = rule_held(program, "paid_ads", hold_until=timezone.now() + timedelta(days=3))
        data = release(agent, commission).json()["data"]
        assert (data["status"], data["held_at"], data["approved_at"]) == ("pending", None, None)
        assert CommissionReview.objects.filter(commission=commission).latest("pk").reason == ""

    @pytest.mark.parametrize("body", [{"reason": 42}, {"reason": ["x"]}, {"reason": "x" * 501}])
    def test_a_bad_reason_is_400_and_releases_nothing(self, agent, program, body):
        commission = rule_held(program, "self_referral")
        response = release(agent, commission, body)
        assert response.json() == platform_error(
            400, "BadRequestError", messages.HOLD_REASON_INVALID, messages.CODE_BAD_REQUEST
        )
        commission.refresh_from_db()
        assert (commission.held_at is not None, commission.hold_rule) == (True, "self_referral")
        assert CommissionReview.objects.filter(commission=commission).count() == 1
        assert not AgentAuditEntry.objects.exists()

    def test_the_openapi_description_says_a_due_release_credits_at_once(self, client):
        schema = client.get("/api/schema/", {"format": "json"}).json()
        operation = schema["paths"]["/api/agent/v1/commissions/{commission_id}/release"]["post"]
        assert "credited at once" in operation["summary"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert set(schema["components"]["schemas"][body]["properties"]) == {"reason"}
        parameters = {p["name"] for p in schema["paths"]["/api/agent/v1/commissions"]["get"]["parameters"]}
        assert {"held", "hold_rule", "flagged"} <= parameters
