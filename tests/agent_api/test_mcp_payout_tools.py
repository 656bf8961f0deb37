"""`svc mcp`'s payout-run tools: list_payout_runs and get_payout_run with payouts:read, preview_payout_run and
confirm_payout_run with payouts:write, each one call to its agent route (the SDK's stdio client against the real
server, as in test_mcp_server.py)."""

import json
from typing import Any

import pytest

from agent_api.models import AgentAuditEntry
from payouts.models import Payout, PayoutRun
from svc_cli.mcp_server import SCOPE_TOOLS, tool_request, tools_for
from tests.agent_api.test_mcp_server import _api, _key, _openapi, _schema_paths, _session
from tests.factories import ProgramFactory, WorkspaceFactory
from tests.payouts.money import balance, credited, ledger_exact, payable_partner
from tests.served.conftest import Served, served  # noqa: F401  (the served-layer server, as a fixture here)

PAYOUT_READ_TOOLS = {spec.name for spec in SCOPE_TOOLS["payouts:read"]}
PAYOUT_WRITE_TOOLS = {spec.name for spec in SCOPE_TOOLS["payouts:write"]}
RUN_TOOLS = {"list_payout_runs", "get_payout_run", "preview_payout_run", "confirm_payout_run"}


def _query(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "query", "schema": {"type": "string"}} for name in names]


ROUTES: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("get", "/api/agent/v1/payouts/balances", _query("cursor", "limit")),
    ("get", "/api/agent/v1/payouts/withdrawals", _query("cursor", "limit")),
    ("get", "/api/agent/v1/payouts/runs", _query("program_id", "currency", "status", "cursor", "limit")),
    ("post", "/api/agent/v1/payouts/runs", []),
    ("get", "/api/agent/v1/payouts/runs/{run_id}", []),
    ("post", "/api/agent/v1/payouts/runs/{run_id}/confirm", []),
]


def _answer(answers: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
    return answers[f"{name}{json.dumps(arguments, sort_keys=True)}"]


def test_the_payout_run_tools_follow_their_scopes_and_routes():
    openapi = _openapi(*ROUTES)
    assert PAYOUT_READ_TOOLS == {"partner_balances", "list_withdrawals", "list_payout_runs", "get_payout_run"}
    assert PAYOUT_WRITE_TOOLS == {"preview_payout_run", "confirm_payout_run"}
    assert set(tools_for(["payouts:read"], openapi)) == {"whoami", *PAYOUT_READ_TOOLS}
    # write includes read
    assert set(tools_for(["payouts:write"], openapi)) == {"whoami", *PAYOUT_READ_TOOLS, *PAYOUT_WRITE_TOOLS}
    # A service without the run routes is offered none of their tools.
    assert not RUN_TOOLS & set(tools_for(["payouts:write"], _openapi(*ROUTES[:2])))

    tools = tools_for(["payouts:write"], openapi)
    assert tool_request(tools["list_payout_runs"], {"program_id": 3, "currency": "USD", "status": "preview"}) == (
        "/api/agent/v1/payouts/runs",
        {"program_id": "3", "currency": "USD", "status": "preview"},
        None,
    )
    assert tool_request(tools["get_payout_run"], {"run_id": 7}) == ("/api/agent/v1/payouts/runs/7", None, None)
    assert tool_request(tools["preview_payout_run"], {"program_id": 3, "currency": "EUR", "minimum_cents": 0}) == (
        "/api/agent/v1/payouts/runs",
        None,
        {"program_id": 3, "currency": "EUR", "minimum_cents": 0},
    )
    assert tool_request(tools["confirm_payout_run"], {"run_id": 7}) == (
        "/api/agent/v1/payouts/runs/7/confirm",
        None,
        {},
    )
    assert tools["confirm_payout_run"].as_tool().annotations.destructive_hint is True
    assert tools["preview_payout_run"].as_tool().annotations.destructive_hint is False
    assert tools["list_payout_runs"].as_tool().annotations.read_only_hint is True
    assert tools["preview_payout_run"].input_schema()["required"] == ["program_id", "currency"]
    with pytest.raises(ValueError, match="Missing argument: currency"):
        tool_request(tools["preview_payout_run"], {"program_id": 3})
    with pytest.raises(ValueError, match="Missing argument: run_id"):
        tool_request(tools["confirm_payout_run"], {})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_agent_previews_confirms_and_reads_a_run_through_the_tools(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    foreign = ProgramFactory.create()
    ann, bob = payable_partner(program, name="Ann"), payable_partner(program, name="Bob")
    credited(ann, program, amount=10_000)
    credited(bob, program, amount=5_000)
    key = _key(workspace, ("payouts:write",))
    preview = {"program_id": program.pk, "currency": "USD"}

    answers = _session(
        served.url,
        key,
        tmp_path,
        [("preview_payout_run", preview), ("preview_payout_run", {"program_id": foreign.pk, "currency": "USD"})],
    )

    paths = _schema_paths(served.url)
    assert {"/api/agent/v1/payouts/runs", "/api/agent/v1/payouts/runs/{run_id}/confirm"} <= paths
    assert RUN_TOOLS <= set(answers["tools"])
    assert answers["tools"]["confirm_payout_run"].annotations.destructive_hint is True
    previewed = _answer(answers, "preview_payout_run", preview)
    assert not previewed.is_error, previewed.content
    run = previewed.structured_content
    assert (run["status"], run["total_cents"]) == ("preview", 3_000)
    assert [(line["partner_id"], line["amount_cents"], line["ready"]) for line in run["lines"]] == [
        (ann.pk, 2_000, True),
        (bob.pk, 1_000, True),
    ]
    hidden = _answer(answers, "preview_payout_run", {"program_id": foreign.pk, "currency": "USD"})
    assert hidden.structured_content["error"] == {"code": "not_found", "message": "Program not found", "status": 404}

    calls: list[tuple[str, dict[str, Any]]] = [
        ("confirm_payout_run", {"run_id": run["id"]}),
        ("get_payout_run", {"run_id": run["id"]}),
        ("list_payout_runs", {"program_id": program.pk, "status": "confirmed"}),
    ]
    answers = _session(served.url, key, tmp_path, calls)

    confirmed = _answer(answers, *calls[0])
    assert not confirmed.is_error, confirmed.content
    assert confirmed.structured_content["status"] == "confirmed"
    assert [p["amount_cents"] for p in confirmed.structured_content["payouts"]] == [2_000, 1_000]
    got = _answer(answers, *calls[1]).structured_content
    assert got == _api(served.url, key, f"/payouts/runs/{run['id']}")["data"] == confirmed.structured_content
    listed = _answer(answers, *calls[2]).structured_content
    api = _api(served.url, key, f"/payouts/runs?program_id={program.pk}&status=confirmed")
    assert listed == {"data": api["data"], "next_cursor": None} and [r["id"] for r in listed["data"]] == [run["id"]]
    assert (balance(ann), balance(bob)) == (0, 0)
    for partner in (ann, bob):
        ledger_exact(partner)

    # A second confirm is the API's 409, as a tool error; nothing more is paid.
    again = _answer(_session(served.url, key, tmp_path, [calls[0]]), *calls[0])
    assert again.is_error and again.structured_content["error"]["code"] == "payout_run_confirmed"
    assert Payout.objects.count() == 2 and PayoutRun.objects.count() == 1
    actions = list(AgentAuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == ["payout_run.preview", "payout_run.confirm"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_read_key_gets_the_read_tools_only(served: Served, tmp_path):  # noqa: F811
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    key = _key(workspace, ("payouts:read",))

    answers = _session(
        served.url, key, tmp_path, [("list_payout_runs", {}), ("preview_payout_run", {"program_id": program.pk})]
    )

    tools = set(answers["tools"])
    assert {"list_payout_runs", "get_payout_run"} <= tools and not PAYOUT_WRITE_TOOLS & tools
    assert set(answers["tools"]["list_payout_runs"].input_schema["properties"]) == {
        "program_id",
        "currency",
        "status",
        "cursor",
        "limit",
    }
    assert _answer(answers, "list_payout_runs", {}).structured_content == {"data": [], "next_cursor": None}
    refused = _answer(answers, "preview_payout_run", {"program_id": program.pk})
    assert refused.structured_content["error"]["code"] == "unknown_tool"
