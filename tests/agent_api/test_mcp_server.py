"""`svc mcp` against the real server: the SDK's own stdio client starts it as a subprocess with an agent key, lists
its tools and calls them; the answers are compared with the agent API's. The tool choice (scopes, routes in the
OpenAPI description) is also checked without a server."""

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from django.utils import timezone
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agent_api.models import AgentAuditEntry
from commissions.models import CommissionStatus, LedgerEntry
from commissions.services import partner_balance
from programs.services import agent_key_create
from svc_cli.mcp_server import SCOPE_TOOLS, tool_request, tools_for
from tests.factories import (
    CommissionFactory,
    ProgramFactory,
    ReferralLinkFactory,
    WebhookEndpointFactory,
    WorkspaceFactory,
)
from tests.served.conftest import Served, served  # noqa: F401  (the served-layer server, as a fixture here)
from tracking.models import ClickEvent
from webhooks.events import event_new
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from webhooks.signing import secret_decrypt

SVC = Path(sys.executable).with_name("svc")
READ_TOOLS = {"whoami", "list_programs", "get_program", "program_readiness"}
WRITE_TOOLS = {spec.name for spec in SCOPE_TOOLS["commissions:write"]}


def _key(workspace, scopes: tuple[str, ...]) -> str:
    return agent_key_create(workspace=workspace, name="mcp test", scopes=scopes)[1]


def _env(url: str, key: str, tmp_path: Path) -> dict[str, str]:
    # SVC_CONFIG_DIR: a developer's saved `svc login` stays out of the test.
    return {"SVC_AGENT_KEY": key, "SVC_BASE_URL": url, "SVC_CONFIG_DIR": str(tmp_path)}


def _api(url: str, key: str, path: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/api/agent/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=20)
    assert response.status_code == 200, response.text
    return response.json()


def _unclocked(program: dict[str, Any]) -> dict[str, Any]:
    """A program answer without the time its readiness was computed (two calls, two times)."""
    return {**program, "readiness": {k: v for k, v in program["readiness"].items() if k != "checked_at"}}


def _schema_paths(url: str) -> set[str]:
    return set(httpx.get(f"{url}/api/schema/", params={"format": "json"}, timeout=30).json()["paths"])


def _session(url: str, key: str, tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Starts `svc mcp` through the SDK's stdio client; answers {"tools": {name: Tool}, name: CallToolResult}."""
    params = StdioServerParameters(command=str(SVC), args=["mcp"], env=_env(url, key, tmp_path))

    async def talk() -> dict[str, Any]:
        with (tmp_path / "mcp-stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                answers: dict[str, Any] = {"tools": {tool.name: tool for tool in listed.tools}}
                for name, arguments in calls:
                    answers[f"{name}{json.dumps(arguments, sort_keys=True)}"] = await session.call_tool(name, arguments)
                return answers

    return anyio.run(talk)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_read_only_key_gets_the_read_tools_and_their_answers_are_the_apis(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    older, newer = ProgramFactory.create(workspace=workspace), ProgramFactory.create(workspace=workspace)
    ProgramFactory.create()  # another workspace's
    key = _key(workspace, ("programs:read",))

    answers = _session(
        served.url,
        key,
        tmp_path,
        [
            ("whoami", {}),
            ("list_programs", {}),
            ("list_programs", {"limit": 1}),
            ("get_program", {"program_id": older.pk}),
            ("program_readiness", {"program_id": newer.pk}),
            ("get_program", {"program_id": 999999999}),
        ],
    )

    tools = answers["tools"]
    assert READ_TOOLS <= set(tools)
    assert not WRITE_TOOLS & set(tools)
    # Tools of scopes the key lacks are not offered, whether or not the service has their routes.
    assert not {"list_events", "list_commissions", "get_commission", "partner_balances"} & set(tools)
    for tool in tools.values():
        assert tool.description
        assert tool.input_schema["type"] == "object"
    assert tools["get_program"].input_schema["required"] == ["program_id"]
    assert set(tools["list_programs"].input_schema["properties"]) == {"cursor", "limit"}

    whoami = answers["whoami{}"]
    assert not whoami.is_error
    assert whoami.structured_content["scopes"] == ["programs:read"]
    assert whoami.structured_content["workspace_id"] == workspace.pk

    listed = answers["list_programs{}"]
    api_list = _api(served.url, key, "/programs")
    assert listed.structured_content == {"data": api_list["data"], "next_cursor": api_list["next_cursor"]}
    assert [program["id"] for program in listed.structured_content["data"]] == [newer.pk, older.pk]
    assert json.loads(listed.content[0].text) == listed.structured_content

    first_page = answers['list_programs{"limit": 1}'].structured_content
    assert [program["id"] for program in first_page["data"]] == [newer.pk]
    assert first_page["next_cursor"]

    program = answers[f'get_program{{"program_id": {older.pk}}}'].structured_content
    assert _unclocked(program) == _unclocked(_api(served.url, key, f"/programs/{older.pk}")["data"])
    assert program["readiness"]["status"] == "incomplete"

    readiness = answers[f'program_readiness{{"program_id": {newer.pk}}}'].structured_content
    api_readiness = _api(served.url, key, f"/programs/{newer.pk}")["data"]["readiness"]
    assert _unclocked({"readiness": readiness}) == _unclocked({"readiness": api_readiness})

    missing = answers['get_program{"program_id": 999999999}']
    assert missing.is_error
    assert missing.structured_content["error"] == {"code": "not_found", "message": "Program not found", "status": 404}
    assert missing.content[0].text == "not_found: Program not found"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_other_read_tools_answer_as_their_routes_when_the_service_has_them(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    key = _key(workspace, ("programs:read", "events:read", "commissions:read", "payouts:read"))
    routes: dict[str, tuple[str, dict[str, Any]]] = {
        "program_performance": (f"/programs/{program.pk}/performance", {"program_id": program.pk}),
        "list_events": ("/events", {"type": "sale", "program_id": program.pk, "limit": 5}),
        "list_commissions": ("/commissions", {"program_id": program.pk}),
        "partner_balances": ("/payouts/balances", {}),
        "list_withdrawals": ("/payouts/withdrawals", {}),
    }
    paths = _schema_paths(served.url)

    answers = _session(served.url, key, tmp_path, [(name, arguments) for name, (_, arguments) in routes.items()])

    for name, (path, arguments) in routes.items():
        route = "/api/agent/v1" + (path.replace(str(program.pk), "{program_id}") if "performance" in path else path)
        assert (name in answers["tools"]) == (route in paths), name
        if route not in paths:
            continue
        answer = answers[f"{name}{json.dumps(arguments, sort_keys=True)}"]
        assert not answer.is_error, answer.content
        query = {k: v for k, v in arguments.items() if f"{{{k}}}" not in route}
        api = httpx.get(
            f"{served.url}/api/agent/v1{path}", params=query, headers={"Authorization": f"Bearer {key}"}, timeout=20
        ).json()
        expected = {"data": api["data"], "next_cursor": api["next_cursor"]} if "next_cursor" in api else api["data"]
        assert answer.structured_content == expected, name


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_key_without_programs_read_is_not_offered_the_program_tools(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    ProgramFactory.create(workspace=workspace)
    key = _key(workspace, ("events:read",))

    answers = _session(served.url, key, tmp_path, [("list_programs", {})])

    tools = set(answers["tools"])
    assert "whoami" in tools
    assert not (READ_TOOLS - {"whoami"}) & tools
    assert ("list_events" in tools) == ("/api/agent/v1/events" in _schema_paths(served.url))
    refused = answers["list_programs{}"]
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "unknown_tool"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_write_tools_are_offered_to_a_write_key_once_the_service_has_the_routes(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    key = _key(workspace, ("commissions:write",))

    tools = set(_session(served.url, key, tmp_path, [])["tools"])

    paths = _schema_paths(served.url)
    assert ("approve_commission" in tools) == any(
        path.startswith("/api/agent/v1/commissions/{") and path.endswith("/approve") for path in paths
    )
    # commissions:write includes commissions:read.
    assert ("list_commissions" in tools) == ("/api/agent/v1/commissions" in paths)
    assert "list_programs" not in tools


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_approve_commission_approves_a_real_commission_through_the_api(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    link = ReferralLinkFactory.create(program=program)
    commission = CommissionFactory.create(
        sale__customer__link=link, amount_cents=2_000, hold_until=timezone.now() + timedelta(days=7)
    )
    foreign = CommissionFactory.create()  # another workspace's
    key = _key(workspace, ("commissions:write",))

    answers = _session(
        served.url,
        key,
        tmp_path,
        [
            ("approve_commission", {"commission_id": commission.pk}),
            ("release_commission", {"commission_id": commission.pk}),
            ("approve_commission", {"commission_id": foreign.pk}),
            ("hold_commission", {"commission_id": foreign.pk, "reason": "checking"}),
        ],
    )

    tools = answers["tools"]
    assert WRITE_TOOLS <= set(tools)
    assert tools["approve_commission"].annotations.read_only_hint is False
    assert tools["void_commission"].input_schema["required"] == ["commission_id", "reason"]
    assert tools["hold_commission"].input_schema["required"] == ["commission_id"]
    assert "reason" in tools["hold_commission"].input_schema["properties"]

    approved = answers[f'approve_commission{{"commission_id": {commission.pk}}}']
    assert not approved.is_error, approved.content
    commission.refresh_from_db()
    assert (commission.status, commission.credited) == (CommissionStatus.APPROVED, True)
    assert approved.structured_content == _api(served.url, key, "/commissions")["data"][0]
    assert approved.structured_content["status"] == "approved"
    assert partner_balance(partner_id=commission.partner_id, currency=commission.currency) == 2_000
    assert LedgerEntry.objects.filter(commission=commission).count() == 1
    entry = AgentAuditEntry.objects.get()
    assert entry.before is not None
    assert (entry.action, entry.object_id, entry.before["status"], entry.after) == (
        "commission.approve",
        str(commission.pk),
        "pending",
        approved.structured_content,
    )
    assert entry.idempotency_key  # the server sends one with every write

    not_held = answers[f'release_commission{{"commission_id": {commission.pk}}}']
    assert not_held.is_error
    assert not_held.structured_content["error"] == {
        "code": "commission_state",
        "message": "This commission is not on hold",
        "status": 409,
    }

    for name in ("approve_commission", "hold_commission"):
        arguments = {"commission_id": foreign.pk, **({"reason": "checking"} if name == "hold_commission" else {})}
        refused = answers[f"{name}{json.dumps(arguments, sort_keys=True)}"]
        assert refused.is_error
        assert refused.structured_content["error"] == {
            "code": "not_found",
            "message": "Commission not found",
            "status": 404,
        }
    foreign.refresh_from_db()
    assert (foreign.status, foreign.held_at) == (CommissionStatus.PENDING, None)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_refused_or_missing_key_stops_the_server_with_the_apis_message(served: Served, tmp_path):  # noqa: F811
    refused = subprocess.run(
        [str(SVC), "mcp"],
        env={"PATH": "", **_env(served.url, "agt_not-a-key", tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stdout == ""  # stdout is the MCP channel
    assert "Invalid agent API key" in refused.stderr
    assert "(HTTP 401, invalid_api_key)" in refused.stderr

    missing = subprocess.run(
        [str(SVC), "mcp"],
        env={"PATH": "", **_env(served.url, "", tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1
    assert "SVC_AGENT_KEY is not set" in missing.stderr


# --- the tool choice, without a server ------------------------------------------------------------------------------


def _openapi(*routes: tuple[str, str, list[dict[str, Any]]]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for method, path, parameters in routes:
        paths.setdefault(path, {})[method] = {"parameters": parameters}
    return {"paths": paths}


def test_tools_follow_the_scopes_and_the_routes_the_service_describes():
    openapi = _openapi(
        ("get", "/api/agent/v1/commissions", []),
        ("post", "/api/agent/v1/commissions/{id}/approve", []),
    )
    assert set(tools_for(["programs:read"], None)) == READ_TOOLS
    assert set(tools_for([], openapi)) == {"whoami"}
    # write includes read; only the routes the service has are offered.
    assert set(tools_for(["commissions:write"], openapi)) == {"whoami", "list_commissions", "approve_commission"}
    assert set(tools_for(["commissions:read"], openapi)) == {"whoami", "list_commissions"}


def test_a_get_tool_takes_the_query_parameters_its_route_declares():
    openapi = _openapi(
        (
            "get",
            "/api/agent/v1/programs/{program_id}/performance",
            [
                {"name": "program_id", "in": "path", "schema": {"type": "integer"}},
                {"name": "dateFrom", "in": "query", "schema": {"type": "string"}},
                {
                    "name": "granularity",
                    "in": "query",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "day or month",
                },
            ],
        ),
    )
    spec = tools_for(["programs:read"], openapi)["program_performance"]
    assert spec.properties["dateFrom"]["format"] == "date"  # the declared schema wins
    assert spec.properties["granularity"] == {"type": "string", "description": "day or month"}
    assert "dateTo" not in spec.properties  # the route does not take it
    assert spec.required == ("program_id", "granularity")
    assert tool_request(spec, {"program_id": 7, "dateFrom": "2026-01-01", "granularity": "day"}) == (
        "/api/agent/v1/programs/7/performance",
        {"dateFrom": "2026-01-01", "granularity": "day"},
        None,
    )


def test_tool_arguments_fill_the_path_query_and_body():
    tools = tools_for(
        ["commissions:write", "events:read"],
        _openapi(
            ("post", "/api/agent/v1/commissions/{commission_id}/void", []),
            ("get", "/api/agent/v1/events", [{"name": "test", "in": "query"}, {"name": "limit", "in": "query"}]),
        ),
    )
    assert tool_request(tools["void_commission"], {"commission_id": 3, "reason": "fraud"}) == (
        "/api/agent/v1/commissions/3/void",
        None,
        {"reason": "fraud"},
    )
    assert tool_request(tools["list_events"], {"test": True, "limit": 5}) == (
        "/api/agent/v1/events",
        {"test": "true", "limit": "5"},
        None,
    )
    with pytest.raises(ValueError, match="Missing argument: reason"):
        tool_request(tools["void_commission"], {"commission_id": 3})
    with pytest.raises(ValueError, match="Unknown argument: status"):
        tool_request(tools["list_events"], {"status": "x"})


# --- webhooks -------------------------------------------------------------------------------------------------------

WEBHOOK_READ_TOOLS = {spec.name for spec in SCOPE_TOOLS["webhooks:read"]}
WEBHOOK_WRITE_TOOLS = {spec.name for spec in SCOPE_TOOLS["webhooks:write"]}


def test_the_webhook_tools_follow_the_webhooks_scopes():
    routes = [
        ("get", "/api/agent/v1/webhooks/endpoints", []),
        ("post", "/api/agent/v1/webhooks/endpoints", []),
        ("get", "/api/agent/v1/webhooks/endpoints/{endpoint_id}", []),
        ("patch", "/api/agent/v1/webhooks/endpoints/{endpoint_id}", []),
        ("delete", "/api/agent/v1/webhooks/endpoints/{endpoint_id}", []),
        ("post", "/api/agent/v1/webhooks/endpoints/{endpoint_id}/rotate-secret", []),
        ("get", "/api/agent/v1/webhooks/endpoints/{endpoint_id}/deliveries", []),
        ("post", "/api/agent/v1/webhooks/endpoints/{endpoint_id}/resend-failed", []),
        ("get", "/api/agent/v1/webhooks/deliveries/{delivery_id}/attempts", []),
        ("post", "/api/agent/v1/webhooks/deliveries/{delivery_id}/resend", []),
        ("get", "/api/agent/v1/webhooks/events", []),
    ]
    openapi = _openapi(*routes)
    assert set(tools_for(["webhooks:read"], openapi)) == {"whoami", *WEBHOOK_READ_TOOLS}
    assert set(tools_for(["webhooks:write"], openapi)) == {"whoami", *WEBHOOK_READ_TOOLS, *WEBHOOK_WRITE_TOOLS}
    assert set(tools_for(["webhooks:write"], None)) == {"whoami"}  # a service without the routes
    assert len(WEBHOOK_READ_TOOLS | WEBHOOK_WRITE_TOOLS) == len(routes)

    tools = tools_for(["webhooks:write"], openapi)
    assert tool_request(tools["update_webhook_endpoint"], {"endpoint_id": 4, "enabled": False}) == (
        "/api/agent/v1/webhooks/endpoints/4",
        None,
        {"enabled": False},
    )
    assert tool_request(tools["delete_webhook_endpoint"], {"endpoint_id": 4}) == (
        "/api/agent/v1/webhooks/endpoints/4",
        None,
        {},
    )
    assert tools["delete_webhook_endpoint"].as_tool().annotations.destructive_hint is True
    assert tools["rotate_webhook_secret"].as_tool().annotations.destructive_hint is False
    with pytest.raises(ValueError, match="Missing argument: event_types"):
        tool_request(tools["create_webhook_endpoint"], {"url": "https://hooks.example.com/"})
    with pytest.raises(ValueError, match="Missing argument: until"):
        tool_request(tools["resend_failed_webhook_deliveries"], {"endpoint_id": 4, "since": "2026-01-01"})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_webhook_tools_manage_endpoints_through_the_api(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    endpoint = WebhookEndpointFactory.create(program=program)
    first_secret: str = endpoint.secret_for_tests  # type: ignore[attr-defined]
    event = event_new(program_id=program.pk, type="sale.created", livemode=True, data={"amount_cents": 4900})
    event.save(force_insert=True)
    delivery = WebhookDelivery.objects.create(event=event, endpoint=endpoint, status=DeliveryStatus.FAILED)
    foreign = WebhookEndpointFactory.create()
    key = _key(workspace, ("webhooks:write",))
    create = {"program_id": program.pk, "url": "https://hooks.example.com/new", "event_types": ["lead.created"]}

    answers = _session(
        served.url,
        key,
        tmp_path,
        [
            ("create_webhook_endpoint", create),
            ("list_webhook_endpoints", {"program_id": program.pk}),
            ("update_webhook_endpoint", {"endpoint_id": endpoint.pk, "description": "CRM"}),
            ("rotate_webhook_secret", {"endpoint_id": endpoint.pk}),
            ("list_webhook_deliveries", {"endpoint_id": endpoint.pk, "status": "failed"}),
            ("resend_webhook_delivery", {"delivery_id": delivery.pk}),
            ("list_webhook_events", {"program_id": program.pk, "type": "sale.created"}),
            ("rotate_webhook_secret", {"endpoint_id": foreign.pk}),
            ("create_webhook_endpoint", {"url": "ftp://nope", "event_types": ["*"]}),
        ],
    )

    assert WEBHOOK_READ_TOOLS | WEBHOOK_WRITE_TOOLS <= set(answers["tools"])
    assert answers["tools"]["list_webhook_deliveries"].input_schema["properties"]["status"]["enum"] == [
        "pending",
        "succeeded",
        "failed",
    ]

    created = answers[f"create_webhook_endpoint{json.dumps(create, sort_keys=True)}"]
    assert not created.is_error, created.content
    made = WebhookEndpoint.objects.get(url="https://hooks.example.com/new")
    assert created.structured_content["id"] == made.pk
    # The served process encrypts under its own SECRET_KEY: the secret is known here by its last four characters.
    secret = created.structured_content["secret"]
    assert secret.startswith("whsec_") and made.secret_last4 == secret[-4:]

    listed = answers[f'list_webhook_endpoints{{"program_id": {program.pk}}}'].structured_content
    api_list = _api(served.url, key, f"/webhooks/endpoints?program_id={program.pk}")
    # The other endpoint was changed by later calls of the session; the one made is as the API answers it now.
    assert [e["id"] for e in listed["data"]] == [e["id"] for e in api_list["data"]] == [made.pk, endpoint.pk]
    assert listed["data"][0] == api_list["data"][0] and listed["next_cursor"] is None
    assert "secret" not in json.dumps(listed["data"]).replace("secret_last4", "").replace("previous_secret", "")

    updated = answers[f'update_webhook_endpoint{{"description": "CRM", "endpoint_id": {endpoint.pk}}}']
    assert updated.structured_content["description"] == "CRM"

    rotated = answers[f'rotate_webhook_secret{{"endpoint_id": {endpoint.pk}}}'].structured_content
    endpoint.refresh_from_db()
    assert endpoint.secret_last4 == rotated["secret"][-4:] != first_secret[-4:]
    # The previous secret's ciphertext is the factory's, made here.
    assert secret_decrypt(endpoint.previous_secret_encrypted) == first_secret
    assert endpoint.previous_secret_expires_at is not None
    assert rotated["previous_secret_expires_at"] == endpoint.previous_secret_expires_at.isoformat()

    deliveries = answers[
        f'list_webhook_deliveries{{"endpoint_id": {endpoint.pk}, "status": "failed"}}'
    ].structured_content
    assert [d["id"] for d in deliveries["data"]] == [delivery.pk]
    resent = answers[f'resend_webhook_delivery{{"delivery_id": {delivery.pk}}}'].structured_content
    assert resent["queued"] is True
    events = answers[f'list_webhook_events{{"program_id": {program.pk}, "type": "sale.created"}}'].structured_content
    assert [e["id"] for e in events["data"]] == [event.public_id]

    refused = answers[f'rotate_webhook_secret{{"endpoint_id": {foreign.pk}}}']
    assert refused.is_error
    assert refused.structured_content["error"] == {
        "code": "not_found",
        "message": "Webhook endpoint not found",
        "status": 404,
    }
    invalid = answers['create_webhook_endpoint{"event_types": ["*"], "url": "ftp://nope"}']
    assert invalid.structured_content["error"] == {
        "code": "invalid_request",
        "message": "url must be a valid http or https URL",
        "status": 400,
    }
    actions = list(AgentAuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == [
        "webhook_endpoint.create",
        "webhook_endpoint.update",
        "webhook_endpoint.rotate_secret",
        "webhook_delivery.resend",
    ]


def test_a_get_tool_takes_the_values_of_a_filter_the_route_declares_as_any_of():
    status = {
        "name": "status",
        "in": "query",
        "schema": {"anyOf": [{"enum": ["pending", "failed"], "type": "string"}, {"type": "string", "maxLength": 0}]},
    }
    openapi = _openapi(("get", "/api/agent/v1/webhooks/endpoints/{endpoint_id}/deliveries", [status]))
    spec = tools_for(["webhooks:read"], openapi)["list_webhook_deliveries"]
    assert spec.properties["status"] == {
        "enum": ["pending", "failed"],
        "type": "string",
        "description": "pending, succeeded or failed",
    }


# --- fraud rules ----------------------------------------------------------------------------------------------------

FRAUD_ROUTES: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("get", "/api/agent/v1/programs/{program_id}/fraud-rules", []),
    ("patch", "/api/agent/v1/programs/{program_id}/fraud-rules/{rule}", []),
    ("delete", "/api/agent/v1/programs/{program_id}/fraud-rules/{rule}", []),
    ("get", "/api/agent/v1/programs/{program_id}/flagged-clicks", []),
]


def test_the_fraud_rule_tools_follow_the_program_and_event_scopes():
    openapi = _openapi(*FRAUD_ROUTES)
    assert set(tools_for(["programs:read"], openapi)) == READ_TOOLS | {"list_fraud_rules"}
    assert set(tools_for(["programs:write"], openapi)) == READ_TOOLS | {
        "list_fraud_rules",
        "update_fraud_rule",
        "reset_fraud_rule",
    }
    assert set(tools_for(["events:read"], openapi)) == {"whoami", "list_flagged_clicks"}
    assert set(tools_for(["programs:write", "events:read"], None)) == READ_TOOLS  # a service without the routes

    tools = tools_for(["programs:write", "events:read"], openapi)
    assert tool_request(tools["update_fraud_rule"], {"program_id": 2, "rule": "paid_ads", "enabled": True}) == (
        "/api/agent/v1/programs/2/fraud-rules/paid_ads",
        None,
        {"enabled": True},
    )
    assert tool_request(tools["reset_fraud_rule"], {"program_id": 2, "rule": "bot"}) == (
        "/api/agent/v1/programs/2/fraud-rules/bot",
        None,
        {},
    )
    assert tool_request(tools["list_flagged_clicks"], {"program_id": 2}) == (
        "/api/agent/v1/programs/2/flagged-clicks",
        None,
        None,
    )
    assert tools["reset_fraud_rule"].as_tool().annotations.destructive_hint is True
    assert tools["update_fraud_rule"].as_tool().annotations.destructive_hint is False
    assert tools["list_fraud_rules"].as_tool().annotations.read_only_hint is True
    with pytest.raises(ValueError, match="Missing argument: rule"):
        tool_request(tools["update_fraud_rule"], {"program_id": 2, "enabled": True})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_fraud_rule_tools_change_a_programs_rules_through_the_api(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    link = ReferralLinkFactory.create(program=program)
    bot = ClickEvent.objects.create(program=program, partner=link.partner, link=link, click_id="clk_bot", traffic="bot")
    ClickEvent.objects.create(program=program, partner=link.partner, link=link, click_id="clk_counted")
    foreign = ProgramFactory.create()
    key = _key(workspace, ("programs:write", "events:read"))
    change = {"program_id": program.pk, "rule": "sale_velocity", "enabled": True, "threshold": 2}

    answers = _session(
        served.url,
        key,
        tmp_path,
        [
            ("update_fraud_rule", change),
            ("list_fraud_rules", {"program_id": program.pk}),
            ("reset_fraud_rule", {"program_id": program.pk, "rule": "sale_velocity"}),
            ("list_flagged_clicks", {"program_id": program.pk, "kind": "bot"}),
            ("update_fraud_rule", {"program_id": program.pk, "rule": "bot", "threshold": 3}),
            ("update_fraud_rule", {"program_id": foreign.pk, "rule": "bot", "enabled": False}),
        ],
    )

    tools = answers["tools"]
    assert {"list_fraud_rules", "update_fraud_rule", "reset_fraud_rule", "list_flagged_clicks"} <= set(tools)
    assert tools["list_flagged_clicks"].input_schema["properties"]["kind"]["enum"] == [
        "duplicate",
        "bot",
        "prefetch",
        "paid_ads",
    ]
    updated = answers[f"update_fraud_rule{json.dumps(change, sort_keys=True)}"]
    assert not updated.is_error, updated.content
    assert (updated.structured_content["threshold"], updated.structured_content["customised"]) == (2, True)
    listed = answers[f'list_fraud_rules{{"program_id": {program.pk}}}'].structured_content
    velocity = next(rule for rule in listed["data"] if rule["rule"] == "sale_velocity")
    assert velocity == updated.structured_content
    reset = answers[f'reset_fraud_rule{{"program_id": {program.pk}, "rule": "sale_velocity"}}'].structured_content
    assert (reset["enabled"], reset["threshold"], reset["customised"]) == (False, 3, False)
    assert _api(served.url, key, f"/programs/{program.pk}/fraud-rules")["data"][4] == reset

    flagged = answers[f'list_flagged_clicks{{"kind": "bot", "program_id": {program.pk}}}'].structured_content
    assert [click["id"] for click in flagged["data"]] == [bot.pk] and flagged["next_cursor"] is None

    refused = answers[f'update_fraud_rule{{"program_id": {program.pk}, "rule": "bot", "threshold": 3}}']
    assert refused.structured_content["error"] == {
        "code": "invalid_request",
        "message": "The bot rule has no threshold",
        "status": 400,
    }
    hidden = answers[f'update_fraud_rule{{"enabled": false, "program_id": {foreign.pk}, "rule": "bot"}}']
    assert hidden.structured_content["error"]["code"] == "not_found"
    actions = list(AgentAuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == ["fraud_rule.update", "fraud_rule.reset"]
