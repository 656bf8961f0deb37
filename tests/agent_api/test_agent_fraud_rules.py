"""A program's fraud rules through the agent API: GET /programs/:id/fraud-rules (programs:read), PATCH and DELETE
/programs/:id/fraud-rules/:rule (programs:write): the defaults, a change and a reset as the click and sale paths
read them, strict input that changes nothing when refused, idempotency and the audit entry."""

from typing import Any

import pytest

from agent_api import messages
from agent_api.models import AgentAuditEntry, AgentIdempotencyRecord
from core import messages as core_messages
from fraud.config import program_rules_read
from fraud.models import RuleSetting
from fraud.rules import SPECS, THRESHOLD_RANGE, WINDOW_RANGE
from tests.agent_api.conftest import agent_for
from tests.factories import ProgramFactory, WorkspaceFactory
from tests.helpers import platform_error

pytestmark = pytest.mark.django_db


def rules_of(program) -> str:
    return f"/api/agent/v1/programs/{program.pk}/fraud-rules"


def rule_of(program, rule: str) -> str:
    return f"{rules_of(program)}/{rule}"


def patch(agent, path: str, body: Any, **headers):
    return agent.client.patch(path, body, format="json", **headers)


def bad_request(message: str) -> dict[str, Any]:
    return platform_error(400, "BadRequestError", message, messages.CODE_BAD_REQUEST)


def scope_missing(scope: str) -> dict[str, Any]:
    return platform_error(
        403, "ForbiddenError", messages.SCOPE_MISSING.format(scope=scope), "missing_scope", {"scope": scope}
    )


DEFAULTS = [
    {
        "rule": "duplicate_click",
        "enabled": True,
        "action": "flag",
        "threshold": None,
        "window_minutes": 60,
        "customised": False,
        "description": SPECS["duplicate_click"].description,
    },
    {
        "rule": "bot",
        "enabled": True,
        "action": "flag",
        "threshold": None,
        "window_minutes": None,
        "customised": False,
        "description": SPECS["bot"].description,
    },
    {
        "rule": "self_referral",
        "enabled": True,
        "action": "hold",
        "threshold": None,
        "window_minutes": None,
        "customised": False,
        "description": SPECS["self_referral"].description,
    },
    {
        "rule": "paid_ads",
        "enabled": False,
        "action": "hold",
        "threshold": None,
        "window_minutes": None,
        "customised": False,
        "description": SPECS["paid_ads"].description,
    },
    {
        "rule": "sale_velocity",
        "enabled": False,
        "action": "hold",
        "threshold": 3,
        "window_minutes": 1440,
        "customised": False,
        "description": SPECS["sale_velocity"].description,
    },
    {
        "rule": "visitor_velocity",
        "enabled": False,
        "action": "hold",
        "threshold": 5,
        "window_minutes": 60,
        "customised": False,
        "description": SPECS["visitor_velocity"].description,
    },
]


class TestRead:
    def test_a_program_without_settings_lists_every_rule_on_its_defaults(self, agent, program):
        response = agent.get(rules_of(program))
        assert response.status_code == 200
        assert response.json() == {"data": DEFAULTS}

    def test_a_saved_setting_is_listed_as_customised(self, agent, program):
        RuleSetting.objects.create(program=program, rule="paid_ads", enabled=True, action="flag")
        by_rule = {item["rule"]: item for item in agent.get(rules_of(program)).json()["data"]}
        assert (by_rule["paid_ads"]["enabled"], by_rule["paid_ads"]["action"]) == (True, "flag")
        assert by_rule["paid_ads"]["customised"] is True
        assert by_rule["bot"]["customised"] is False

    def test_it_reads_with_programs_read_and_refuses_a_key_without_it(self, workspace, program):
        assert agent_for(workspace, scopes=("programs:read",)).get(rules_of(program)).status_code == 200
        assert agent_for(workspace, scopes=("programs:write",)).get(rules_of(program)).status_code == 200
        response = agent_for(workspace, scopes=("events:read", "commissions:write")).get(rules_of(program))
        assert response.json() == scope_missing("programs:read")

    def test_another_workspaces_program_or_one_outside_a_limited_key_is_404(self, workspace, program):
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        sibling = ProgramFactory.create(workspace=workspace)
        limited = agent_for(workspace, programs=(program,))
        for agent, target in ((agent_for(workspace), foreign), (limited, sibling)):
            response = agent.get(rules_of(target))
            assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND, "not_found")
        assert agent_for(workspace).get("/api/agent/v1/programs/abc/fraud-rules").status_code == 404

    def test_the_list_costs_the_same_queries_with_or_without_settings(self, agent, program, django_assert_num_queries):
        agent.get(rules_of(program))  # the key's first use is recorded once
        # the key, the programs it is limited to, the program, its settings
        with django_assert_num_queries(4):
            assert agent.get(rules_of(program)).status_code == 200
        for rule in ("bot", "paid_ads", "sale_velocity"):
            RuleSetting.objects.create(program=program, rule=rule, enabled=True, action="hold")
        with django_assert_num_queries(4):
            assert agent.get(rules_of(program)).status_code == 200


class TestUpdate:
    def test_it_changes_only_what_is_sent_and_the_paths_read_it(self, agent, program):
        response = patch(agent, rule_of(program, "sale_velocity"), {"enabled": True, "threshold": 10})
        assert response.status_code == 200
        assert response.json() == {
            "data": {**DEFAULTS[4], "enabled": True, "threshold": 10, "customised": True},
        }
        config = program_rules_read(program.pk).get("sale_velocity")
        assert (config.enabled, config.action, config.threshold, config.window_minutes) == (True, "hold", 10, 1440)
        response = patch(agent, rule_of(program, "sale_velocity"), {"action": "flag", "window_minutes": 30})
        assert response.json()["data"] == {
            **DEFAULTS[4],
            "enabled": True,
            "action": "flag",
            "threshold": 10,
            "window_minutes": 30,
            "customised": True,
        }
        assert RuleSetting.objects.get(program=program, rule="sale_velocity").window_minutes == 30

    def test_it_is_audited_with_the_rule_before_and_after(self, agent, program):
        response = patch(agent, rule_of(program, "bot"), {"enabled": False}, HTTP_X_REQUEST_ID="req-1")
        entry = AgentAuditEntry.objects.get()
        assert (entry.action, entry.object_type, entry.object_id) == (
            "fraud_rule.update",
            "fraud_rule",
            f"{program.pk}:bot",
        )
        assert entry.before == DEFAULTS[1]
        assert entry.after == response.json()["data"] == {**DEFAULTS[1], "enabled": False, "customised": True}
        assert entry.workspace_id == program.workspace_id

    def test_a_retry_with_the_same_idempotency_key_changes_once_and_answers_the_same(self, agent, program):
        path = rule_of(program, "paid_ads")
        first = patch(agent, path, {"enabled": True}, HTTP_IDEMPOTENCY_KEY="k1")
        RuleSetting.objects.filter(program=program, rule="paid_ads").update(enabled=False)  # changed meanwhile
        again = patch(agent, path, {"enabled": True}, HTTP_IDEMPOTENCY_KEY="k1")
        assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
        assert again.json() == first.json()
        assert RuleSetting.objects.get(program=program, rule="paid_ads").enabled is False  # not written again
        assert AgentAuditEntry.objects.count() == 1 and AgentIdempotencyRecord.objects.count() == 1
        other = patch(agent, path, {"enabled": False}, HTTP_IDEMPOTENCY_KEY="k1")
        assert other.status_code == 409
        assert other.json()["error"]["code"] == messages.CODE_IDEMPOTENCY_CONFLICT

    @pytest.mark.parametrize(
        ("rule", "body", "message"),
        [
            ("bot", {}, messages.FRAUD_RULE_PATCH_EMPTY),
            ("bot", {"enabled": True, "mode": "x"}, messages.FRAUD_RULE_UNKNOWN_FIELDS.format(fields="mode")),
            ("bot", {"customised": False}, messages.FRAUD_RULE_UNKNOWN_FIELDS.format(fields="customised")),
            ("bot", {"enabled": "true"}, messages.FRAUD_RULE_ENABLED_INVALID),
            ("bot", {"enabled": 1}, messages.FRAUD_RULE_ENABLED_INVALID),
            ("bot", {"enabled": None}, messages.FRAUD_RULE_ENABLED_INVALID),
            ("bot", {"action": "block"}, core_messages.FRAUD_RULE_ACTION_INVALID),
            ("bot", {"action": None}, core_messages.FRAUD_RULE_ACTION_INVALID),
            ("bot", {"action": ["hold"]}, core_messages.FRAUD_RULE_ACTION_INVALID),
            ("sale_velocity", {"threshold": "5"}, messages.FRAUD_RULE_NUMBER_INVALID.format(field="threshold")),
            ("sale_velocity", {"threshold": 5.5}, messages.FRAUD_RULE_NUMBER_INVALID.format(field="threshold")),
            ("sale_velocity", {"threshold": True}, messages.FRAUD_RULE_NUMBER_INVALID.format(field="threshold")),
            ("sale_velocity", {"threshold": None}, messages.FRAUD_RULE_NUMBER_INVALID.format(field="threshold")),
            (
                "sale_velocity",
                {"threshold": 0},
                core_messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
            ),
            (
                "sale_velocity",
                {"threshold": 10**30},
                core_messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
            ),
            (
                "duplicate_click",
                {"window_minutes": WINDOW_RANGE[1] + 1},
                core_messages.FRAUD_RULE_WINDOW_RANGE.format(low=WINDOW_RANGE[0], high=WINDOW_RANGE[1]),
            ),
            ("bot", {"threshold": 5}, core_messages.FRAUD_RULE_NO_THRESHOLD.format(rule="bot")),
            ("self_referral", {"window_minutes": 60}, core_messages.FRAUD_RULE_NO_WINDOW.format(rule="self_referral")),
        ],
    )
    def test_bad_input_is_400_saying_why_and_changes_nothing(self, agent, program, rule, body, message):
        response = patch(agent, rule_of(program, rule), body)
        assert response.json() == bad_request(message)
        assert not RuleSetting.objects.exists() and not AgentAuditEntry.objects.exists()

    def test_a_body_that_is_not_an_object_is_400(self, agent, program):
        response = patch(agent, rule_of(program, "bot"), [{"enabled": False}])
        assert response.json() == bad_request(messages.BODY_NOT_OBJECT)
        assert not RuleSetting.objects.exists()

    def test_an_unknown_rule_is_404_naming_the_rules(self, agent, program):
        for method in (agent.client.patch, agent.client.delete):
            response = method(rule_of(program, "captcha"), {"enabled": False}, format="json")
            assert response.json() == platform_error(
                404,
                "NotFoundError",
                messages.FRAUD_RULE_NOT_FOUND.format(
                    rule="captcha",
                    known="duplicate_click, bot, self_referral, paid_ads, sale_velocity, visitor_velocity",
                ),
                "not_found",
            )
        assert not AgentAuditEntry.objects.exists()

    def test_it_needs_programs_write(self, workspace, program):
        reader = agent_for(workspace, scopes=("programs:read", "commissions:write"))
        assert patch(reader, rule_of(program, "bot"), {"enabled": False}).json() == scope_missing("programs:write")
        assert reader.client.delete(rule_of(program, "bot")).json() == scope_missing("programs:write")
        assert not RuleSetting.objects.exists()

    def test_a_program_outside_the_key_is_404_and_unchanged(self, workspace, program):
        sibling = ProgramFactory.create(workspace=workspace)
        foreign = ProgramFactory.create(workspace=WorkspaceFactory.create())
        limited = agent_for(workspace, programs=(program,))
        for agent, target in ((limited, sibling), (agent_for(workspace), foreign)):
            assert patch(agent, rule_of(target, "bot"), {"enabled": False}).status_code == 404
            assert agent.client.delete(rule_of(target, "bot")).status_code == 404
        assert patch(limited, rule_of(program, "bot"), {"enabled": False}).status_code == 200
        assert list(RuleSetting.objects.values_list("program_id", flat=True)) == [program.pk]
        assert AgentAuditEntry.objects.count() == 1


class TestReset:
    def test_it_puts_the_rule_back_on_its_defaults_audited(self, agent, program):
        patch(agent, rule_of(program, "visitor_velocity"), {"enabled": True, "threshold": 2})
        response = agent.client.delete(rule_of(program, "visitor_velocity"))
        assert response.status_code == 200
        assert response.json() == {"data": DEFAULTS[5]}
        assert not RuleSetting.objects.exists()
        assert program_rules_read(program.pk).get("visitor_velocity").threshold == 5
        entry = AgentAuditEntry.objects.order_by("pk").last()
        assert entry is not None
        assert (entry.action, entry.object_id) == ("fraud_rule.reset", f"{program.pk}:visitor_velocity")
        assert entry.before == {**DEFAULTS[5], "enabled": True, "threshold": 2, "customised": True}
        assert entry.after == DEFAULTS[5]

    def test_resetting_a_rule_on_its_defaults_changes_nothing_and_answers_them(self, agent, program):
        response = agent.client.delete(rule_of(program, "bot"))
        assert response.json() == {"data": DEFAULTS[1]}

    def test_a_retried_reset_is_replayed(self, agent, program):
        path = rule_of(program, "paid_ads")
        patch(agent, path, {"enabled": True})
        first = agent.client.delete(path, HTTP_IDEMPOTENCY_KEY="r1")
        patch(agent, path, {"enabled": True})
        again = agent.client.delete(path, HTTP_IDEMPOTENCY_KEY="r1")
        assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
        assert RuleSetting.objects.get(program=program, rule="paid_ads").enabled is True
