"""A program's groups through the agent API (groups:read / groups:write): groups with their terms and discount,
tier rules and bonuses, moving a partner and its group changes, coupon codes. Each write leaves its audit entry
and replays on a retry with its Idempotency-Key; bad input is a 4xx in the platform envelope and changes nothing;
another program's or workspace's ids are 404."""

from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from agent_api import messages
from agent_api.models import AgentAuditEntry
from commissions.models import Commission
from groups.models import Bonus, BonusAward, CouponCode, GroupChange, PartnerGroup, TierRule
from groups.selectors import default_group
from groups.services import group_create
from programs.models import AGENT_SCOPES, PartnerProgram
from tests.agent_api.conftest import agent_for
from tests.contract.schema import assert_documented
from tests.factories import PartnerFactory, PartnerProgramFactory, ProgramFactory, WorkspaceFactory
from tests.helpers import platform_error
from webhooks.models import EventType, WebhookEvent

pytestmark = pytest.mark.django_db

API = "/api/agent/v1"


def groups_of(program) -> str:
    return f"{API}/programs/{program.pk}/groups"


def group_of(program, group) -> str:
    return f"{groups_of(program)}/{group.pk}"


def changes_of(program, partner) -> str:
    return f"{API}/programs/{program.pk}/partners/{partner.pk}/group-changes"


def codes_of(program) -> str:
    return f"{API}/programs/{program.pk}/coupon-codes"


def send(agent, method: str, path: str, body: Any = None, key: str | None = None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return getattr(agent.client, method)(path, body, format="json", **headers)


def bad_request(message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return platform_error(400, "BadRequestError", message, messages.CODE_BAD_REQUEST, details)


def not_found(message: str) -> dict[str, Any]:
    return platform_error(404, "NotFoundError", message, messages.CODE_NOT_FOUND)


def scope_missing(scope: str) -> dict[str, Any]:
    return platform_error(
        403, "ForbiddenError", messages.SCOPE_MISSING.format(scope=scope), "missing_scope", {"scope": scope}
    )


@pytest.fixture
def schema(client) -> dict[str, Any]:
    return client.get("/api/schema/", {"format": "json"}).json()


@pytest.fixture
def enrolled(program):
    return PartnerProgramFactory.create(program=program).partner


@pytest.fixture
def gold(program) -> PartnerGroup:
    return group_create(program=program, name="Gold", commission_rate=Decimal("30"))


def test_the_group_scopes_are_agent_scopes():
    assert {"groups:read", "groups:write"} <= set(AGENT_SCOPES)


class TestGroups:
    def test_the_list_has_the_default_group_with_the_programs_terms(self, agent, program, schema):
        program.commission_type, program.commission_rate, program.hold_days = "fixed", Decimal("500"), 14
        program.save()
        response = agent.get(groups_of(program))
        assert response.status_code == 200
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/groups", "get", response)
        [group] = response.json()["data"]
        assert group["is_default"] is True and group["name"] == "Default"
        assert (group["commission_type"], group["commission_rate"], group["hold_days"]) == ("fixed", 500, 14)
        assert response.json()["next_cursor"] is None

    def test_create_get_update_and_delete_are_audited(self, agent, program, schema):
        body = {
            "name": "Influencers",
            "commission_type": "fixed",
            "commission_rate": 5000,
            "discount_type": "percent",
            "discount_percent": "10",
            "discount_duration": "repeating",
            "discount_duration_months": 3,
            "applications_open": True,
            "application_questions": [{"label": "Your channel?", "required": True}],
        }
        created = send(agent, "post", groups_of(program), body)
        assert created.status_code == 201, created.json()
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/groups", "post", created)
        data = created.json()["data"]
        assert (data["slug"], data["commission_type"], data["commission_rate"]) == ("influencers", "fixed", 5000)
        assert (data["discount_percent"], data["discount_duration_months"], data["is_default"]) == (10, 3, False)
        group = PartnerGroup.objects.get(pk=data["id"])
        assert group.program_id == program.pk and group.discount_percent == Decimal("10.00")

        got = agent.get(group_of(program, group))
        assert got.status_code == 200 and got.json() == {"data": data}
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/groups/{group_id}", "get", got)

        updated = send(agent, "patch", group_of(program, group), {"commission_rate": "62.5", "name": "Creators"})
        assert updated.status_code == 200, updated.json()
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/groups/{group_id}", "patch", updated)
        assert (updated.json()["data"]["commission_rate"], updated.json()["data"]["name"]) == (62.5, "Creators")

        deleted = send(agent, "delete", group_of(program, group))
        assert deleted.status_code == 200
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/groups/{group_id}", "delete", deleted)
        assert deleted.json() == {"data": {"id": group.pk, "deleted": True}}
        assert not PartnerGroup.objects.filter(pk=group.pk).exists()

        entries = list(AgentAuditEntry.objects.order_by("pk"))
        assert [(e.action, e.object_type, e.object_id) for e in entries] == [
            ("group.create", "group", str(group.pk)),
            ("group.update", "group", str(group.pk)),
            ("group.delete", "group", str(group.pk)),
        ]
        assert entries[0].before is None and entries[0].after["name"] == "Influencers"
        assert entries[1].before["commission_rate"] == "5000.0000"
        assert entries[1].after["commission_rate"] == "62.5000"
        assert entries[2].after is None and entries[2].key_masked.startswith("agt_")

    def test_the_default_groups_terms_are_the_programs_and_it_stays(self, agent, program):
        default = default_group(program)
        response = send(agent, "patch", group_of(program, default), {"commission_rate": 30})
        assert response.status_code == 400
        assert response.json() == bad_request(
            "The default group's terms are the program's settings: change them there", {"reason": "invalid_group"}
        )
        renamed = send(agent, "patch", group_of(program, default), {"name": "Everyone"})
        assert renamed.status_code == 200 and renamed.json()["data"]["commission_rate"] == 20
        refused = send(agent, "delete", group_of(program, default))
        assert refused.status_code == 400 and refused.json()["error"]["details"] == {"reason": "default_group"}
        assert PartnerGroup.objects.filter(pk=default.pk).exists()
        assert [e.action for e in AgentAuditEntry.objects.all()] == ["group.update"]

    def test_a_group_with_partners_is_not_deleted_and_a_taken_name_is_409(self, agent, program, gold, enrolled):
        PartnerProgram.objects.filter(partner=enrolled, program=program).update(group=gold)
        response = send(agent, "delete", group_of(program, gold))
        assert response.status_code == 409 and response.json()["error"]["code"] == "group_not_empty"
        taken = send(agent, "post", groups_of(program), {"name": "gold"})
        assert taken.status_code == 409 and taken.json()["error"]["code"] == "group_name_taken"
        assert PartnerGroup.objects.filter(program=program).count() == 2
        assert not AgentAuditEntry.objects.exists()

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"name": "X", "commission_rate": 0}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": -5}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": "twenty"}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": True}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": 1e30}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": "1" * 5000}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": "NaN"}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": 0.00001}, messages.GROUP_RATE_INVALID),
            ({"name": "X", "commission_rate": 150}, messages.GROUP_RATE_OVER_100),
            (
                {"name": "X", "commission_type": "recurring_percent", "commission_rate": 100.5},
                messages.GROUP_RATE_OVER_100,
            ),
            ({"name": "X", "commission_type": "bogus"}, None),
            ({"name": ""}, messages.GROUP_NAME_INVALID),
            ({"name": "   "}, messages.GROUP_NAME_INVALID),
            ({"name": "x" * 101}, messages.GROUP_NAME_INVALID),
            ({"name": 7}, messages.GROUP_NAME_INVALID),
            ({}, messages.GROUP_NAME_INVALID),
            ({"name": "X", "hold_days": 366}, None),
            ({"name": "X", "hold_days": "3"}, None),
            ({"name": "X", "duration_months": 2**80}, None),
            ({"name": "X", "discount_type": "percent"}, messages.GROUP_DISCOUNT_PERCENT_REQUIRED),
            (
                {"name": "X", "discount_type": "percent", "discount_percent": 150},
                messages.GROUP_DISCOUNT_PERCENT_INVALID,
            ),
            ({"name": "X", "discount_type": "amount"}, messages.GROUP_DISCOUNT_AMOUNT_REQUIRED),
            ({"name": "X", "discount_type": "amount", "discount_amount_cents": 0}, None),
            ({"name": "X", "discount_duration": "repeating"}, messages.GROUP_DISCOUNT_MONTHS_REQUIRED),
            ({"name": "X", "discount_currency": "GBP"}, None),
            ({"name": "X", "applications_open": "yes"}, messages.GROUP_FLAG_INVALID.format(field="applications_open")),
            ({"name": "X", "application_questions": [{"label": ""}]}, None),
            ({"name": "X", "application_questions": [{"label": "Q", "extra": 1}]}, None),
            ({"name": "X", "application_questions": "Q"}, None),
            ({"name": "X", "rate": 30}, None),
            ({"name": "X", "stripe_coupon_id": "co_1"}, None),
            ({"name": "X", "is_default": True}, None),
        ],
    )
    def test_bad_input_is_400_and_makes_nothing(self, agent, program, body, message):
        default_group(program)
        response = send(agent, "post", groups_of(program), body)
        assert response.status_code == 400, response.json()
        error = response.json()["error"]
        assert error["code"] == messages.CODE_BAD_REQUEST
        if message is not None:
            assert error["message"] == message
        assert PartnerGroup.objects.filter(program=program).count() == 1
        assert not AgentAuditEntry.objects.exists()

    def test_an_unknown_field_is_named(self, agent, program):
        response = send(agent, "post", groups_of(program), {"name": "X", "rate": 30})
        assert response.json()["error"]["message"].startswith("Unknown field(s): rate. Send name, commission_type")

    def test_a_body_that_is_not_an_object_and_an_empty_patch_are_400(self, agent, program, gold):
        assert send(agent, "post", groups_of(program), ["Gold"]).json() == bad_request(messages.BODY_NOT_OBJECT)
        response = send(agent, "patch", group_of(program, gold), {})
        assert response.status_code == 400 and response.json()["error"]["message"].startswith("Send name, ")

    def test_a_patch_is_judged_with_what_the_group_has(self, agent, program):
        group = group_create(program=program, name="Flat", commission_type="fixed", commission_rate=Decimal("150"))
        response = send(agent, "patch", group_of(program, group), {"commission_type": "percent"})
        assert response.json() == bad_request(messages.GROUP_RATE_OVER_100)
        discount = send(agent, "patch", group_of(program, group), {"discount_type": "amount"})
        assert discount.json() == bad_request(messages.GROUP_DISCOUNT_AMOUNT_REQUIRED)
        fine = send(agent, "patch", group_of(program, group), {"discount_type": "amount", "discount_amount_cents": 500})
        assert fine.status_code == 200 and fine.json()["data"]["discount_amount_cents"] == 500
        group.refresh_from_db()
        assert (group.commission_type, group.discount_type) == ("fixed", "amount")

    def test_a_retry_replays_and_another_body_with_the_key_is_409(self, agent, program):
        first = send(agent, "post", groups_of(program), {"name": "Silver"}, key="g-1")
        again = send(agent, "post", groups_of(program), {"name": "Silver"}, key="g-1")
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
        assert PartnerGroup.objects.filter(program=program, name="Silver").count() == 1
        assert AgentAuditEntry.objects.get().idempotency_key == "g-1"
        other = send(agent, "post", groups_of(program), {"name": "Bronze"}, key="g-1")
        assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"
        assert not PartnerGroup.objects.filter(name="Bronze").exists()


class TestScopes:
    def test_reads_need_groups_read_and_writes_groups_write(self, workspace, program, gold):
        others = tuple(scope for scope in AGENT_SCOPES if not scope.startswith("groups:"))
        outsider = agent_for(workspace, scopes=others)
        assert outsider.get(groups_of(program)).json() == scope_missing("groups:read")
        assert outsider.get(group_of(program, gold)).json() == scope_missing("groups:read")
        assert send(outsider, "post", groups_of(program), {"name": "X"}).json() == scope_missing("groups:write")
        reader = agent_for(workspace, scopes=("groups:read",))
        assert reader.get(groups_of(program)).status_code == 200
        assert reader.get(codes_of(program)).status_code == 200
        assert send(reader, "patch", group_of(program, gold), {"name": "Y"}).json() == scope_missing("groups:write")
        assert send(reader, "post", codes_of(program), {}).json() == scope_missing("groups:write")
        writer = agent_for(workspace, scopes=("groups:write",))
        assert writer.get(f"{group_of(program, gold)}/tier-rules").status_code == 200  # write includes read
        assert not AgentAuditEntry.objects.exists()


class TestIsolation:
    def test_another_workspaces_program_group_partner_and_code_are_404(self, agent, program, gold, enrolled):
        foreign_program = ProgramFactory.create()
        foreign_group = group_create(program=foreign_program, name="Theirs")
        foreign_partner = PartnerProgramFactory.create(program=foreign_program).partner
        foreign_code = CouponCode.objects.create(program=foreign_program, partner=foreign_partner, code="THEIRS")
        program_404 = not_found("Program not found")
        for path in (
            groups_of(foreign_program),
            group_of(foreign_program, foreign_group),
            f"{group_of(foreign_program, foreign_group)}/tier-rules",
            f"{group_of(foreign_program, foreign_group)}/bonuses",
            changes_of(foreign_program, foreign_partner),
            f"{API}/programs/{foreign_program.pk}/partners/{foreign_partner.pk}/group",
            codes_of(foreign_program),
        ):
            assert agent.get(path).json() == program_404, path
        assert send(agent, "patch", group_of(foreign_program, foreign_group), {"name": "Mine"}).json() == program_404
        assert send(agent, "delete", group_of(foreign_program, foreign_group)).json() == program_404
        deactivate = f"{codes_of(foreign_program)}/{foreign_code.pk}/deactivate"
        assert send(agent, "post", deactivate).json() == program_404

        # Their ids under one of our programs' paths.
        group_404 = not_found(messages.GROUP_NOT_FOUND)
        assert agent.get(group_of(program, foreign_group)).json() == group_404
        assert send(agent, "patch", group_of(program, foreign_group), {"name": "Mine"}).json() == group_404
        assert send(agent, "delete", group_of(program, foreign_group)).json() == group_404
        assert agent.get(f"{group_of(program, foreign_group)}/bonuses").json() == group_404
        assert agent.get(f"{groups_of(program)}/abc").json()["error"]["code"] == "not_found"
        partner_404 = not_found(messages.PARTNER_NOT_FOUND)
        assert agent.get(changes_of(program, foreign_partner)).json() == partner_404
        assert send(agent, "post", changes_of(program, foreign_partner), {"group_id": gold.pk}).json() == partner_404
        moved_elsewhere = send(agent, "post", changes_of(program, enrolled), {"group_id": foreign_group.pk})
        assert moved_elsewhere.json() == group_404
        body = {"partner_id": foreign_partner.pk, "code": "MINE"}
        assert send(agent, "post", codes_of(program), body).json() == partner_404
        assert send(agent, "post", f"{codes_of(program)}/{foreign_code.pk}/deactivate").json() == not_found(
            messages.COUPON_CODE_NOT_FOUND
        )
        foreign_group.refresh_from_db()
        foreign_code.refresh_from_db()
        assert foreign_group.name == "Theirs" and foreign_code.is_active
        assert not AgentAuditEntry.objects.exists()

    def test_a_key_limited_to_programs_sees_only_their_groups(self, workspace, program, gold):
        other = ProgramFactory.create(workspace=workspace)
        limited = agent_for(workspace, programs=(other,))
        assert limited.get(groups_of(program)).json() == not_found("Program not found")
        assert limited.get(group_of(program, gold)).json() == not_found("Program not found")
        assert limited.get(group_of(other, gold)).json() == not_found(messages.GROUP_NOT_FOUND)
        assert limited.get(groups_of(other)).status_code == 200


class TestTierRulesAndBonuses:
    def test_a_tier_rule_is_made_listed_turned_off_and_deleted(self, agent, program, gold, schema):
        path = f"{group_of(program, default_group(program))}/tier-rules"
        body = {"target_group_id": gold.pk, "metric": "sales", "threshold": 10, "period": "quarter"}
        created = send(agent, "post", path, body)
        assert created.status_code == 201, created.json()
        template = "/api/agent/v1/programs/{program_id}/groups/{group_id}/tier-rules"
        assert_documented(schema, template, "post", created)
        data = created.json()["data"]
        assert (data["direction"], data["target_group_id"], data["period"], data["is_active"]) == (
            "promote",
            gold.pk,
            "quarter",
            True,
        )
        listed = agent.get(path)
        assert listed.json() == {"data": [data], "next_cursor": None}
        assert_documented(schema, template, "get", listed)
        off = send(agent, "patch", f"{path}/{data['id']}", {"is_active": False})
        assert off.status_code == 200 and off.json()["data"]["is_active"] is False
        assert TierRule.objects.get(pk=data["id"]).is_active is False
        deleted = send(agent, "delete", f"{path}/{data['id']}")
        assert deleted.json() == {"data": {"id": data["id"], "deleted": True}}
        assert not TierRule.objects.exists()
        assert [e.action for e in AgentAuditEntry.objects.order_by("pk")] == [
            "tier_rule.create",
            "tier_rule.update",
            "tier_rule.delete",
        ]

    @pytest.mark.parametrize(
        "change",
        [
            {"threshold": 0},
            {"threshold": -1},
            {"threshold": 2**64},
            {"threshold": "10"},
            {"period": "lifetime"},
            {"metric": "clicks"},
            {"direction": "sideways"},
            {"target_group_id": None},
            {"target_group_id": "x"},
            {"colour": "gold"},
        ],
    )
    def test_a_bad_tier_rule_is_400(self, agent, program, gold, change):
        body = {"target_group_id": gold.pk, "metric": "sales", "threshold": 10, **change}
        response = send(agent, "post", f"{group_of(program, default_group(program))}/tier-rules", body)
        assert response.status_code == 400 and response.json()["error"]["code"] == messages.CODE_BAD_REQUEST
        assert not TierRule.objects.exists()

    def test_a_tier_rule_moves_to_another_group_of_the_program(self, agent, program, gold):
        elsewhere = group_create(program=ProgramFactory.create(workspace=program.workspace), name="Other")
        path = f"{group_of(program, gold)}/tier-rules"
        for target in (gold, elsewhere):
            body = {"target_group_id": target.pk, "metric": "revenue", "threshold": 100}
            assert send(agent, "post", path, body).json() == bad_request(messages.TIER_TARGET_INVALID)
        assert not TierRule.objects.exists()

    def test_a_bonus_is_made_and_deleted_unless_paid(self, agent, program, gold, enrolled):
        path = f"{group_of(program, gold)}/bonuses"
        body = {"name": "First ten", "metric": "sales", "threshold": 10, "amount_cents": 5000, "currency": "EUR"}
        created = send(agent, "post", path, body)
        assert created.status_code == 201, created.json()
        data = created.json()["data"]
        assert (data["period"], data["currency"], data["amount_cents"]) == ("lifetime", "EUR", 5000)
        assert agent.get(path).json()["data"] == [data]

        bonus = Bonus.objects.get(pk=data["id"])
        commission = Commission.objects.create(
            kind="bonus",
            program=program,
            partner=enrolled,
            amount_cents=5000,
            currency="EUR",
            status="pending",
            hold_until=timezone.now(),
        )
        BonusAward.objects.create(
            bonus=bonus, partner=enrolled, program=program, period_key="all", figure=10, commission=commission
        )
        refused = send(agent, "delete", f"{path}/{bonus.pk}")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == messages.CODE_BONUS_PAID
        assert refused.json()["error"]["details"] == {"awards": 1}
        stopped = send(agent, "patch", f"{path}/{bonus.pk}", {"is_active": False})
        assert stopped.status_code == 200 and stopped.json()["data"]["is_active"] is False
        BonusAward.objects.all().delete()
        assert send(agent, "delete", f"{path}/{bonus.pk}").status_code == 200
        assert not Bonus.objects.exists()
        assert [e.action for e in AgentAuditEntry.objects.order_by("pk")] == [
            "bonus.create",
            "bonus.update",
            "bonus.delete",
        ]

    @pytest.mark.parametrize(
        "change",
        [
            {"amount_cents": 0},
            {"amount_cents": 2**63},
            {"amount_cents": 12.5},
            {"threshold": 0},
            {"currency": "XYZ"},
            {"name": ""},
            {"name": None},
            {"period": "week"},
            {"bonus": 1},
        ],
    )
    def test_a_bad_bonus_is_400(self, agent, program, gold, change):
        body = {"name": "Ten", "metric": "sales", "threshold": 10, "amount_cents": 500, **change}
        response = send(agent, "post", f"{group_of(program, gold)}/bonuses", body)
        assert response.status_code == 400 and response.json()["error"]["code"] == messages.CODE_BAD_REQUEST
        assert not Bonus.objects.exists()

    def test_a_rule_or_bonus_of_another_group_is_404(self, agent, program, gold):
        default = default_group(program)
        rule = TierRule.objects.create(group=gold, target=default, metric="sales", threshold=5)
        bonus = Bonus.objects.create(group=gold, name="B", metric="sales", threshold=5, amount_cents=100)
        assert send(agent, "delete", f"{group_of(program, default)}/tier-rules/{rule.pk}").json() == not_found(
            messages.TIER_RULE_NOT_FOUND
        )
        assert send(agent, "delete", f"{group_of(program, default)}/bonuses/{bonus.pk}").json() == not_found(
            messages.BONUS_NOT_FOUND
        )
        assert TierRule.objects.exists() and Bonus.objects.exists()


class TestMoves:
    def test_a_move_is_recorded_audited_and_replayed(self, agent, program, gold, enrolled, schema):
        path = changes_of(program, enrolled)
        moved = send(agent, "post", path, {"group_id": gold.pk}, key="move-1")
        assert moved.status_code == 201, moved.json()
        template = "/api/agent/v1/programs/{program_id}/partners/{partner_id}/group-changes"
        assert_documented(schema, template, "post", moved)
        data = moved.json()["data"]
        assert (data["moved"], data["group_id"], data["change"]["to_group"]) == (True, gold.pk, "Gold")
        change = GroupChange.objects.get()
        assert change.reason == "owner" and change.actor.startswith("agent key agt_")
        assert data["change"]["actor"] == change.actor
        assert PartnerProgram.objects.get(partner=enrolled, program=program).group_id == gold.pk
        assert WebhookEvent.objects.filter(type=EventType.PARTNER_GROUP_CHANGED, program=program).count() == 1

        again = send(agent, "post", path, {"group_id": gold.pk}, key="move-1")
        assert again.json() == moved.json() and again["Idempotent-Replayed"] == "true"
        there = send(agent, "post", path, {"group_id": gold.pk})
        assert there.status_code == 200 and there.json()["data"]["moved"] is False
        assert there.json()["data"]["change"] is None
        assert GroupChange.objects.count() == 1

        back = send(agent, "post", path, {"group_id": default_group(program).pk})
        assert back.status_code == 201
        assert PartnerProgram.objects.get(partner=enrolled, program=program).group_id is None

        listed = agent.get(path)
        assert_documented(schema, template, "get", listed)
        assert [(row["from_group"], row["to_group"]) for row in listed.json()["data"]] == [
            ("Gold", "Default"),
            ("Default", "Gold"),
        ]
        current = agent.get(f"{API}/programs/{program.pk}/partners/{enrolled.pk}/group")
        assert current.status_code == 200 and current.json()["data"]["is_default"] is True
        entries = list(AgentAuditEntry.objects.order_by("pk"))
        assert [(e.action, e.object_type) for e in entries] == [("enrolment.move", "enrolment")] * 3
        assert (entries[0].before["group_id"], entries[0].after["group_id"]) == (default_group(program).pk, gold.pk)

    def test_a_partner_not_enrolled_is_400_and_bad_bodies_too(self, agent, program, gold):
        loner = PartnerFactory.create(workspace=program.workspace)
        refused = send(agent, "post", changes_of(program, loner), {"group_id": gold.pk})
        assert refused.json() == bad_request(messages.GROUP_PARTNER_NOT_ENROLLED.format(partner_id=loner.pk))
        group = agent.get(f"{API}/programs/{program.pk}/partners/{loner.pk}/group")
        assert group.status_code == 400
        for body in ({}, {"group_id": "1"}, {"group_id": 0}, {"group_id": 2**70}, {"group_id": gold.pk, "x": 1}):
            response = send(agent, "post", changes_of(program, loner), body)
            assert response.status_code == 400, body
        assert not GroupChange.objects.exists() and not AgentAuditEntry.objects.exists()


class TestCouponCodes:
    def test_codes_are_made_listed_and_deactivated(self, agent, program, enrolled, schema):
        created = send(agent, "post", codes_of(program), {"partner_id": enrolled.pk, "code": " jane20 "})
        assert created.status_code == 201, created.json()
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/coupon-codes", "post", created)
        data = created.json()["data"]
        assert (data["code"], data["source"], data["partner_id"], data["is_active"]) == (
            "JANE20",
            "manual",
            enrolled.pk,
            True,
        )
        other = PartnerProgramFactory.create(program=program).partner
        send(agent, "post", codes_of(program), {"partner_id": other.pk, "code": "OTHER-1"})
        mine = agent.get(codes_of(program), {"partner_id": enrolled.pk})
        assert mine.json() == {"data": [data], "next_cursor": None}
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/coupon-codes", "get", mine)

        path = f"{codes_of(program)}/{data['id']}/deactivate"
        off = send(agent, "post", path)
        assert off.status_code == 200 and off.json()["data"]["is_active"] is False
        assert send(agent, "post", path).status_code == 200
        assert [row["code"] for row in agent.get(codes_of(program), {"active": "false"}).json()["data"]] == ["JANE20"]
        assert [row["code"] for row in agent.get(codes_of(program), {"active": "true"}).json()["data"]] == ["OTHER-1"]
        entries = list(AgentAuditEntry.objects.order_by("pk"))
        assert [e.action for e in entries] == [
            "coupon_code.create",
            "coupon_code.create",
            "coupon_code.deactivate",
            "coupon_code.deactivate",
        ]
        assert entries[2].before["is_active"] is True and entries[2].after["is_active"] is False

    def test_a_taken_code_is_409_whatever_its_case(self, agent, program, enrolled):
        send(agent, "post", codes_of(program), {"partner_id": enrolled.pk, "code": "JANE20"})
        other = PartnerProgramFactory.create(program=program).partner
        response = send(agent, "post", codes_of(program), {"partner_id": other.pk, "code": "Jane20"})
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "coupon_code_taken"
        assert CouponCode.objects.count() == 1 and AgentAuditEntry.objects.count() == 1

    @pytest.mark.parametrize(
        "code", ["JANE 20", "", "   ", "x" * 101, "ja/ne", "ÉTÉ", "-JANE", 20, None, ["JANE"], "JANE\u0000"]
    )
    def test_a_bad_code_is_400(self, agent, program, enrolled, code):
        response = send(agent, "post", codes_of(program), {"partner_id": enrolled.pk, "code": code})
        assert response.status_code == 400, response.json()
        assert response.json()["error"]["code"] == messages.CODE_BAD_REQUEST
        assert not CouponCode.objects.exists()

    def test_a_partner_not_enrolled_and_bad_bodies_are_400(self, agent, program):
        loner = PartnerFactory.create(workspace=program.workspace)
        response = send(agent, "post", codes_of(program), {"partner_id": loner.pk, "code": "LONER"})
        assert response.status_code == 400
        assert response.json()["error"]["details"] == {"reason": "partner_not_enrolled"}
        for body in ({"code": "X"}, {"partner_id": "1", "code": "X"}, {"partner_id": loner.pk, "code": "X", "y": 1}):
            assert send(agent, "post", codes_of(program), body).status_code == 400, body
        assert agent.get(codes_of(program), {"active": "maybe"}).status_code == 400
        assert agent.get(codes_of(program), {"partner_id": "x"}).status_code == 400
        assert not CouponCode.objects.exists()


class TestCouponCodesWithStripe:
    """With the program's Stripe account connected, the route goes through groups.stripe_codes (the Stripe fake,
    through the real stripe library)."""

    @pytest.fixture
    def connected(self, stripe_server, program):
        program.stripe_account_id = stripe_server.create_account()["id"]
        program.save()
        return program

    def test_a_promotion_code_is_made_for_the_groups_coupon(self, agent, connected, enrolled, stripe_server, schema):
        PartnerGroup.objects.filter(pk=default_group(connected).pk).update(
            discount_type="percent", discount_percent=Decimal("10")
        )
        response = send(agent, "post", codes_of(connected), {"partner_id": enrolled.pk, "code": "jane20"}, key="c-1")
        assert response.status_code == 201, response.json()
        assert_documented(schema, "/api/agent/v1/programs/{program_id}/coupon-codes", "post", response)
        data = response.json()["data"]
        assert data["source"] == "stripe" and data["stripe_promotion_code_id"].startswith("promo_")
        made = [r for r in stripe_server.requests if r.method == "POST" and r.path == "/v1/promotion_codes"]
        again = send(agent, "post", codes_of(connected), {"partner_id": enrolled.pk, "code": "jane20"}, key="c-1")
        assert again.json() == response.json() and again["Idempotent-Replayed"] == "true"
        assert len([r for r in stripe_server.requests if r.path == "/v1/promotion_codes"]) == len(made) == 1
        assert CouponCode.objects.count() == 1 and AgentAuditEntry.objects.count() == 1

    def test_a_group_without_a_discount_is_400_and_stripe_failing_502(self, agent, connected, enrolled, stripe_server):
        refused = send(agent, "post", codes_of(connected), {"partner_id": enrolled.pk, "code": "JANE20"})
        assert refused.status_code == 400
        assert refused.json()["error"]["details"] == {"reason": "group_has_no_discount"}
        PartnerGroup.objects.filter(pk=default_group(connected).pk).update(
            discount_type="amount", discount_amount_cents=500
        )
        stripe_server.fail_next("POST /v1/promotion_codes", status=500)
        failed = send(agent, "post", codes_of(connected), {"partner_id": enrolled.pk, "code": "JANE20"})
        assert failed.status_code == 502
        assert failed.json()["data"] is None and failed.json()["error"]["code"] == "stripe_unavailable"
        assert not CouponCode.objects.exists() and not AgentAuditEntry.objects.exists()


def test_a_workspace_without_the_scope_name_in_its_keys_is_unaffected():
    # Existing keys keep their scopes: groups:* is granted only when an operator adds it.
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    old = agent_for(workspace, scopes=("programs:write",))
    assert old.get(groups_of(program)).json() == scope_missing("groups:read")
