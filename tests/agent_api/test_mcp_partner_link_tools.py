"""`svc mcp`'s partner and link tools: a key with partners:* or links:* scopes gets the tools of the agent API's
partner and link routes, and each call answers as its route does (the SDK's stdio client against the real server,
as in test_mcp_server.py)."""

import json
from typing import Any

import pytest

from agent_api.models import AgentAuditEntry
from programs.models import PartnerProgram, ReferralLink
from svc_cli.mcp_server import SCOPE_TOOLS, tool_request, tools_for
from tests.agent_api.test_mcp_server import _api, _key, _openapi, _schema_paths, _session
from tests.factories import PartnerFactory, ProgramFactory, ReferralLinkFactory, WorkspaceFactory
from tests.served.conftest import Served, served  # noqa: F401  (the served-layer server, as a fixture here)

PARTNER_READ_TOOLS = {spec.name for spec in SCOPE_TOOLS["partners:read"]}
PARTNER_WRITE_TOOLS = {spec.name for spec in SCOPE_TOOLS["partners:write"]}
LINK_READ_TOOLS = {spec.name for spec in SCOPE_TOOLS["links:read"]}
LINK_WRITE_TOOLS = {spec.name for spec in SCOPE_TOOLS["links:write"]}


def _query(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "query", "schema": {"type": "string"}} for name in names]


ROUTES: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("get", "/api/agent/v1/partners", _query("program_id", "cursor", "limit")),
    ("post", "/api/agent/v1/partners", []),
    ("get", "/api/agent/v1/partners/{partner_id}", []),
    ("patch", "/api/agent/v1/partners/{partner_id}", []),
    ("post", "/api/agent/v1/partners/{partner_id}/enrollments", []),
    ("get", "/api/agent/v1/links", _query("program_id", "partner_id", "active", "cursor", "limit")),
    ("post", "/api/agent/v1/links", []),
    ("post", "/api/agent/v1/links/{link_id}/deactivate", []),
    ("get", "/api/agent/v1/programs/{program_id}/invitations", _query("cursor", "limit")),
    ("post", "/api/agent/v1/programs/{program_id}/invitations", []),
    ("get", "/api/agent/v1/programs/{program_id}/applications", _query("status", "cursor", "limit")),
    ("post", "/api/agent/v1/applications/{application_id}/approve", []),
    ("post", "/api/agent/v1/applications/{application_id}/reject", []),
]


def _answer(answers: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
    return answers[f"{name}{json.dumps(arguments, sort_keys=True)}"]


def test_the_partner_and_link_tools_follow_their_scopes_and_routes():
    openapi = _openapi(*ROUTES)
    assert PARTNER_READ_TOOLS == {"list_partners", "get_partner", "list_invitations", "list_applications"}
    assert LINK_READ_TOOLS == {"list_links"}
    assert set(tools_for(["partners:read", "links:read"], openapi)) == {"whoami", *PARTNER_READ_TOOLS, "list_links"}
    # write includes read
    assert set(tools_for(["partners:write"], openapi)) == {"whoami", *PARTNER_READ_TOOLS, *PARTNER_WRITE_TOOLS}
    assert set(tools_for(["links:write"], openapi)) == {"whoami", *LINK_READ_TOOLS, *LINK_WRITE_TOOLS}
    assert len(PARTNER_READ_TOOLS | PARTNER_WRITE_TOOLS | LINK_READ_TOOLS | LINK_WRITE_TOOLS) == len(ROUTES)
    assert set(tools_for(["partners:write", "links:write"], None)) == {"whoami"}  # a service without the routes

    tools = tools_for(["partners:write", "links:write"], openapi)
    assert tool_request(tools["list_partners"], {"program_id": 3, "limit": 10}) == (
        "/api/agent/v1/partners",
        {"program_id": "3", "limit": "10"},
        None,
    )
    assert tool_request(tools["get_partner"], {"partner_id": 8}) == ("/api/agent/v1/partners/8", None, None)
    assert tool_request(tools["create_partner"], {"name": "Ann", "program_id": 3}) == (
        "/api/agent/v1/partners",
        None,
        {"name": "Ann", "program_id": 3},
    )
    assert tool_request(tools["update_partner"], {"partner_id": 8, "email": "a@example.com"}) == (
        "/api/agent/v1/partners/8",
        None,
        {"email": "a@example.com"},
    )
    assert tool_request(tools["enroll_partner"], {"partner_id": 8, "program_id": 3}) == (
        "/api/agent/v1/partners/8/enrollments",
        None,
        {"program_id": 3},
    )
    assert tool_request(tools["invite_partner"], {"program_id": 3, "email": "a@example.com"}) == (
        "/api/agent/v1/programs/3/invitations",
        None,
        {"email": "a@example.com"},
    )
    assert tool_request(tools["approve_application"], {"application_id": 4}) == (
        "/api/agent/v1/applications/4/approve",
        None,
        {},
    )
    assert tools["reject_application"].as_tool().annotations.destructive_hint is True
    assert tool_request(tools["list_applications"], {"program_id": 3, "status": "pending"}) == (
        "/api/agent/v1/programs/3/applications",
        {"status": "pending"},
        None,
    )
    assert tool_request(tools["list_invitations"], {"program_id": 3, "limit": 5}) == (
        "/api/agent/v1/programs/3/invitations",
        {"limit": "5"},
        None,
    )
    assert tool_request(tools["list_links"], {"active": False}) == ("/api/agent/v1/links", {"active": "false"}, None)
    assert tool_request(tools["create_link"], {"program_id": 3, "partner_id": 8, "short_link": "ann"}) == (
        "/api/agent/v1/links",
        None,
        {"program_id": 3, "partner_id": 8, "short_link": "ann"},
    )
    assert tool_request(tools["deactivate_link"], {"link_id": 5}) == ("/api/agent/v1/links/5/deactivate", None, {})
    assert tools["deactivate_link"].as_tool().annotations.destructive_hint is True
    assert tools["create_link"].as_tool().annotations.destructive_hint is False
    assert tools["list_links"].as_tool().annotations.read_only_hint is True
    with pytest.raises(ValueError, match="Missing argument: program_id"):
        tool_request(tools["enroll_partner"], {"partner_id": 8})
    with pytest.raises(ValueError, match="Missing argument: name"):
        tool_request(tools["create_partner"], {"email": "a@example.com"})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_partners_and_links_read_key_gets_their_tools_and_the_apis_answers(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    link = ReferralLinkFactory.create(program=program)
    off = ReferralLinkFactory.create(program=program, is_active=False)
    foreign = PartnerFactory.create()  # another workspace's
    key = _key(workspace, ("partners:read", "links:read"))

    answers = _session(
        served.url,
        key,
        tmp_path,
        [
            ("list_partners", {}),
            ("get_partner", {"partner_id": link.partner_id}),
            ("list_links", {"program_id": program.pk}),
            ("list_links", {"active": False}),
            ("get_partner", {"partner_id": foreign.pk}),
            ("create_partner", {"name": "Not allowed"}),
        ],
    )

    paths = _schema_paths(served.url)
    assert {"/api/agent/v1/partners", "/api/agent/v1/partners/{partner_id}", "/api/agent/v1/links"} <= paths
    tools = answers["tools"]
    assert {"whoami", "list_partners", "get_partner", "list_links"} <= set(tools)
    assert not (PARTNER_WRITE_TOOLS | LINK_WRITE_TOOLS) & set(tools)
    assert not {"list_programs", "list_commissions"} & set(tools)
    assert tools["get_partner"].input_schema["required"] == ["partner_id"]
    assert set(tools["list_links"].input_schema["properties"]) == {
        "program_id",
        "partner_id",
        "active",
        "cursor",
        "limit",
    }

    partners = _answer(answers, "list_partners", {})
    assert not partners.is_error, partners.content
    api_partners = _api(served.url, key, "/partners")
    assert partners.structured_content == {"data": api_partners["data"], "next_cursor": api_partners["next_cursor"]}
    assert {p["id"] for p in partners.structured_content["data"]} == {link.partner_id, off.partner_id}

    partner = _answer(answers, "get_partner", {"partner_id": link.partner_id}).structured_content
    assert partner == _api(served.url, key, f"/partners/{link.partner_id}")["data"]
    assert partner["program_ids"] == [program.pk]

    links = _answer(answers, "list_links", {"program_id": program.pk}).structured_content
    assert links == {"data": _api(served.url, key, f"/links?program_id={program.pk}")["data"], "next_cursor": None}
    assert [row["short_link"] for row in links["data"]] == [off.short_link, link.short_link]
    inactive = _answer(answers, "list_links", {"active": False}).structured_content
    assert [row["id"] for row in inactive["data"]] == [off.pk]

    hidden = _answer(answers, "get_partner", {"partner_id": foreign.pk})
    assert hidden.is_error
    assert hidden.structured_content["error"] == {"code": "not_found", "message": "Partner not found", "status": 404}
    refused = _answer(answers, "create_partner", {"name": "Not allowed"})
    assert refused.structured_content["error"]["code"] == "unknown_tool"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_write_tools_create_enroll_and_deactivate_through_the_api(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program, second = ProgramFactory.create(workspace=workspace), ProgramFactory.create(workspace=workspace)
    foreign = ProgramFactory.create()
    key = _key(workspace, ("partners:write", "links:write"))
    create = {"name": "Ann Affiliate", "email": "ann@example.com", "program_id": program.pk}

    answers = _session(served.url, key, tmp_path, [("create_partner", create)])
    created = _answer(answers, "create_partner", create)
    assert not created.is_error, created.content
    partner_id = created.structured_content["id"]
    assert created.structured_content["program_ids"] == [program.pk]
    assert PartnerProgram.objects.filter(partner_id=partner_id, program=program).exists()

    calls: list[tuple[str, dict[str, Any]]] = [
        ("update_partner", {"partner_id": partner_id, "name": "Ann A."}),
        ("enroll_partner", {"partner_id": partner_id, "program_id": second.pk}),
        ("create_link", {"program_id": program.pk, "partner_id": partner_id, "short_link": "ann-mcp"}),
        ("create_link", {"program_id": foreign.pk, "partner_id": partner_id}),
    ]
    answers = _session(served.url, key, tmp_path, calls)

    tools = answers["tools"]
    assert PARTNER_READ_TOOLS | PARTNER_WRITE_TOOLS | LINK_READ_TOOLS | LINK_WRITE_TOOLS <= set(tools)
    assert tools["create_partner"].input_schema["required"] == ["name"]
    assert tools["create_link"].input_schema["required"] == ["program_id", "partner_id"]
    assert tools["deactivate_link"].annotations.destructive_hint is True

    updated = _answer(answers, *calls[0]).structured_content
    assert (updated["name"], updated["email"]) == ("Ann A.", "ann@example.com")
    enrolled = _answer(answers, *calls[1])
    assert enrolled.structured_content == {"partner_id": partner_id, "program_id": second.pk, "created": True}
    made = _answer(answers, *calls[2])
    assert not made.is_error, made.content
    link = ReferralLink.objects.get(short_link="ann-mcp")
    assert (made.structured_content["id"], link.partner_id, link.program_id) == (link.pk, partner_id, program.pk)
    hidden = _answer(answers, *calls[3])
    assert hidden.structured_content["error"] == {"code": "not_found", "message": "Program not found", "status": 404}

    # Each call is one answer per name and arguments: the repeated ones go in a session of their own.
    answers = _session(served.url, key, tmp_path, [calls[1], calls[2], ("deactivate_link", {"link_id": link.pk})])
    assert _answer(answers, *calls[1]).structured_content["created"] is False
    taken = _answer(answers, *calls[2])
    assert taken.is_error and taken.structured_content["error"]["code"] == "short_link_taken"
    deactivated = _answer(answers, "deactivate_link", {"link_id": link.pk})
    assert not deactivated.is_error, deactivated.content
    assert deactivated.structured_content["is_active"] is False
    link.refresh_from_db()
    assert link.is_active is False
    assert deactivated.structured_content == _api(served.url, key, f"/links?program_id={program.pk}")["data"][0]

    actions = list(AgentAuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == [
        "partner.create",
        "partner.update",
        "partner.enroll",
        "link.create",
        "partner.enroll",  # already enrolled: answered 200, still audited
        "link.deactivate",
    ]
