"""`svc mcp`'s group tools: a key with groups:* scopes gets the tools of the agent API's group, tier rule, bonus,
move and coupon code routes, and each call answers as its route does (the SDK's stdio client against the real
server, as in test_mcp_server.py)."""

import json
from decimal import Decimal
from typing import Any

import pytest

from agent_api.models import AgentAuditEntry
from groups.models import CouponCode, GroupChange, PartnerGroup
from groups.selectors import default_group
from programs.models import PartnerProgram
from svc_cli.mcp_server import SCOPE_TOOLS, tool_request, tools_for
from tests.agent_api.test_mcp_server import _api, _key, _openapi, _session
from tests.factories import PartnerProgramFactory, ProgramFactory, WorkspaceFactory
from tests.served.conftest import Served, served  # noqa: F401  (the served-layer server, as a fixture here)

READ_TOOLS = {spec.name for spec in SCOPE_TOOLS["groups:read"]}
WRITE_TOOLS = {spec.name for spec in SCOPE_TOOLS["groups:write"]}
PROGRAM = "/api/agent/v1/programs/{program_id}"
GROUP = f"{PROGRAM}/groups/{{group_id}}"


def _query(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "query", "schema": {"type": "string"}} for name in names]


ROUTES: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("get", f"{PROGRAM}/groups", _query("cursor", "limit")),
    ("post", f"{PROGRAM}/groups", []),
    ("get", GROUP, []),
    ("patch", GROUP, []),
    ("delete", GROUP, []),
    ("get", f"{GROUP}/tier-rules", _query("cursor", "limit")),
    ("post", f"{GROUP}/tier-rules", []),
    ("patch", f"{GROUP}/tier-rules/{{rule_id}}", []),
    ("delete", f"{GROUP}/tier-rules/{{rule_id}}", []),
    ("get", f"{GROUP}/bonuses", _query("cursor", "limit")),
    ("post", f"{GROUP}/bonuses", []),
    ("patch", f"{GROUP}/bonuses/{{bonus_id}}", []),
    ("delete", f"{GROUP}/bonuses/{{bonus_id}}", []),
    ("get", f"{PROGRAM}/partners/{{partner_id}}/group", []),
    ("get", f"{PROGRAM}/partners/{{partner_id}}/group-changes", _query("cursor", "limit")),
    ("post", f"{PROGRAM}/partners/{{partner_id}}/group-changes", []),
    ("get", f"{PROGRAM}/coupon-codes", _query("partner_id", "active", "cursor", "limit")),
    ("post", f"{PROGRAM}/coupon-codes", []),
    ("post", f"{PROGRAM}/coupon-codes/{{code_id}}/deactivate", []),
]


def _answer(answers: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
    return answers[f"{name}{json.dumps(arguments, sort_keys=True)}"]


def test_the_group_tools_follow_their_scopes_and_routes():
    openapi = _openapi(*ROUTES)
    assert {"list_groups", "get_group", "list_coupon_codes", "list_group_changes"} <= READ_TOOLS
    assert {"create_group", "update_group", "move_partner_to_group", "create_coupon_code"} <= WRITE_TOOLS
    assert len(READ_TOOLS | WRITE_TOOLS) == len(ROUTES)
    assert set(tools_for(["groups:read"], openapi)) == {"whoami", *READ_TOOLS}
    assert set(tools_for(["groups:write"], openapi)) == {"whoami", *READ_TOOLS, *WRITE_TOOLS}  # write includes read
    assert not (READ_TOOLS | WRITE_TOOLS) & set(tools_for(["programs:write"], openapi))  # not within programs:*
    assert set(tools_for(["groups:write"], None)) == {"whoami"}  # a service without the routes

    tools = tools_for(["groups:write"], openapi)
    assert tool_request(tools["list_groups"], {"program_id": 3, "limit": 5}) == (
        "/api/agent/v1/programs/3/groups",
        {"limit": "5"},
        None,
    )
    assert tool_request(tools["create_group"], {"program_id": 3, "name": "Gold", "commission_rate": 30}) == (
        "/api/agent/v1/programs/3/groups",
        None,
        {"name": "Gold", "commission_rate": 30},
    )
    assert tool_request(tools["update_group"], {"program_id": 3, "group_id": 9, "hold_days": 7}) == (
        "/api/agent/v1/programs/3/groups/9",
        None,
        {"hold_days": 7},
    )
    assert tool_request(tools["move_partner_to_group"], {"program_id": 3, "partner_id": 4, "group_id": 9}) == (
        "/api/agent/v1/programs/3/partners/4/group-changes",
        None,
        {"group_id": 9},
    )
    assert tool_request(tools["list_coupon_codes"], {"program_id": 3, "partner_id": 4, "active": True}) == (
        "/api/agent/v1/programs/3/coupon-codes",
        {"partner_id": "4", "active": "true"},
        None,
    )
    assert tool_request(tools["deactivate_coupon_code"], {"program_id": 3, "code_id": 2}) == (
        "/api/agent/v1/programs/3/coupon-codes/2/deactivate",
        None,
        {},
    )
    assert tool_request(tools["delete_bonus"], {"program_id": 3, "group_id": 9, "bonus_id": 1})[0] == (
        "/api/agent/v1/programs/3/groups/9/bonuses/1"
    )
    for name in ("delete_group", "delete_tier_rule", "delete_bonus", "deactivate_coupon_code"):
        assert tools[name].as_tool().annotations.destructive_hint is True, name
    assert tools["create_group"].as_tool().annotations.destructive_hint is False
    assert tools["list_groups"].as_tool().annotations.read_only_hint is True
    with pytest.raises(ValueError, match="Missing argument: name"):
        tool_request(tools["create_group"], {"program_id": 3})
    with pytest.raises(ValueError, match="Missing argument: group_id"):
        tool_request(tools["move_partner_to_group"], {"program_id": 3, "partner_id": 4})
    with pytest.raises(ValueError, match="Unknown argument: rate"):
        tool_request(tools["create_group"], {"program_id": 3, "name": "Gold", "rate": 30})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_group_tools_manage_groups_moves_and_codes_through_the_api(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    partner = PartnerProgramFactory.create(program=program).partner
    foreign = ProgramFactory.create()  # another workspace's
    key = _key(workspace, ("groups:write",))
    create = {"program_id": program.pk, "name": "Gold", "commission_rate": 30, "hold_days": 14}

    answers = _session(
        served.url, key, tmp_path, [("create_group", create), ("list_groups", {"program_id": foreign.pk})]
    )
    tools = answers["tools"]
    assert READ_TOOLS | WRITE_TOOLS <= set(tools)
    assert not {"list_programs", "list_partners", "create_link"} & set(tools)
    assert tools["create_group"].input_schema["required"] == ["program_id", "name"]
    created = _answer(answers, "create_group", create)
    assert not created.is_error, created.content
    gold = PartnerGroup.objects.get(pk=created.structured_content["id"])
    assert (gold.name, gold.commission_rate, gold.hold_days) == ("Gold", Decimal("30"), 14)
    hidden = _answer(answers, "list_groups", {"program_id": foreign.pk})
    assert hidden.structured_content["error"] == {"code": "not_found", "message": "Program not found", "status": 404}

    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_groups", {"program_id": program.pk}),
        ("update_group", {"program_id": program.pk, "group_id": gold.pk, "commission_rate": 150}),
        ("move_partner_to_group", {"program_id": program.pk, "partner_id": partner.pk, "group_id": gold.pk}),
        ("create_coupon_code", {"program_id": program.pk, "partner_id": partner.pk, "code": "jane20"}),
        ("list_group_changes", {"program_id": program.pk, "partner_id": partner.pk}),
        ("get_partner_group", {"program_id": program.pk, "partner_id": partner.pk}),
    ]
    answers = _session(served.url, key, tmp_path, calls)
    listed = _answer(answers, *calls[0]).structured_content
    api_groups = _api(served.url, key, f"/programs/{program.pk}/groups")
    assert listed == {"data": api_groups["data"], "next_cursor": api_groups["next_cursor"]}
    assert {row["name"] for row in listed["data"]} == {"Default", "Gold"}
    refused = _answer(answers, *calls[1])
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "invalid_request"
    assert refused.structured_content["error"]["status"] == 400
    moved = _answer(answers, *calls[2])
    assert not moved.is_error, moved.content
    assert moved.structured_content["moved"] is True
    assert PartnerProgram.objects.get(partner=partner, program=program).group_id == gold.pk
    assert GroupChange.objects.get().actor.startswith("agent key agt_")
    code = _answer(answers, *calls[3])
    assert not code.is_error, code.content
    assert code.structured_content["code"] == "JANE20"
    changes = _answer(answers, *calls[4]).structured_content
    assert [row["to_group"] for row in changes["data"]] == ["Gold"]
    assert _answer(answers, *calls[5]).structured_content["id"] == gold.pk

    # Repeated calls go in a session of their own (one answer per name and arguments).
    code_id = CouponCode.objects.get().pk
    again = [
        calls[3],
        ("deactivate_coupon_code", {"program_id": program.pk, "code_id": code_id}),
        (
            "move_partner_to_group",
            {"program_id": program.pk, "partner_id": partner.pk, "group_id": default_group(program).pk},
        ),
        ("delete_group", {"program_id": program.pk, "group_id": gold.pk}),
    ]
    answers = _session(served.url, key, tmp_path, again)
    taken = _answer(answers, *again[0])
    assert taken.is_error and taken.structured_content["error"]["code"] == "coupon_code_taken"
    assert _answer(answers, *again[1]).structured_content["is_active"] is False
    assert _answer(answers, *again[2]).structured_content["moved"] is True
    assert _answer(answers, *again[3]).structured_content == {"id": gold.pk, "deleted": True}
    assert not PartnerGroup.objects.filter(pk=gold.pk).exists()

    actions = list(AgentAuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == [
        "group.create",
        "enrolment.move",
        "coupon_code.create",
        "coupon_code.deactivate",
        "enrolment.move",
        "group.delete",
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_groups_read_key_gets_only_the_read_tools(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    key = _key(workspace, ("groups:read",))
    answers = _session(
        served.url, key, tmp_path, [("list_coupon_codes", {"program_id": program.pk}), ("create_group", {})]
    )
    tools = answers["tools"]
    assert READ_TOOLS <= set(tools) and not WRITE_TOOLS & set(tools)
    assert set(tools["list_coupon_codes"].input_schema["properties"]) == {
        "program_id",
        "partner_id",
        "active",
        "cursor",
        "limit",
    }
    codes = _answer(answers, "list_coupon_codes", {"program_id": program.pk})
    assert codes.structured_content == {"data": [], "next_cursor": None}
    assert _answer(answers, "create_group", {}).structured_content["error"]["code"] == "unknown_tool"
