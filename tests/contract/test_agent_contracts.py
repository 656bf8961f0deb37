"""The agent API (/api/agent/v1/*): every operation's success and the errors an agent meets (400 bad input, 401
no or unknown key, 403 a key without the route's scope, 404 an id it cannot see, 409 a reused Idempotency-Key or
a state that refuses the write), each answer checked against the published description."""

from typing import Any

import pytest

from webhooks.models import WebhookEndpoint

from .cases import Case, case_check, has_id, unknown_id_url
from .world import World

pytestmark = pytest.mark.django_db

API = "/api/agent/v1"
NUL = {"x": "a\x00b"}  # a query value that cannot be stored: refused with 400 before any route's own checks


def agent_cases(
    method: str,
    path: str,
    scope: str | None,
    *,
    ok: int = 200,
    body: Any = None,
    query: Any = None,
    bad_body: Any = None,
    bad_query: dict[str, str] | None = None,
    before: Any = None,
    other_body: Any = None,
) -> list[Case]:
    """The success and the errors every agent route shares; the route's own errors are added beside it."""
    path = API + path
    cases = [
        Case(method, path, ok, "success", "agent", body=body, query=query, before=before),
        Case(method, path, 401, "no key", "anonymous", body=body, query=query),
        Case(method, path, 401, "unknown key", "bad_agent", body=body, query=query),
    ]
    if scope is not None:
        # A key holding another scope only.
        other = "programs_reader" if scope != "programs:read" else "events_reader"
        cases.append(Case(method, path, 403, f"without {scope}", other, body=body, query=query))
    if has_id(path):
        cases.append(Case(method, path, 404, "unknown id", "agent", body=body, query=query, url=unknown_id_url(path)))
    if bad_body is not None:
        cases.append(Case(method, path, 400, "bad body", "agent", body=bad_body))
    else:
        cases.append(Case(method, path, 400, "bad query", "agent", body=body, query=bad_query or NUL))
    if method != "GET":
        cases.append(idempotency_conflict(method, path, body, before, other_body))
    return cases


def idempotency_conflict(method: str, path: str, body: Any, before: Any, other_body: Any) -> Case:
    """A write that succeeded, then its Idempotency-Key sent again with another valid body (a body that fails
    validation is refused with 400 before the key is looked at)."""
    headers = {"HTTP_IDEMPOTENCY_KEY": "contract-retry"}

    def first_call(world: World) -> None:
        if method == "DELETE":
            # A retried DELETE finds nothing left to delete (404): the key is first spent on another request.
            Case("POST", f"{API}/partners", 0, "", "agent", body={"name": "Ada"}, headers=headers).send(world)
        else:
            Case(method, path, 0, "", "agent", body=body, headers=headers, before=before).send(world)

    return Case(
        method,
        path,
        409,
        "reused Idempotency-Key",
        "agent",
        body=other_body or {"another": "body"},
        headers=headers,
        before=first_call,
    )


def hold(world: World) -> None:
    Case("POST", f"{API}/commissions/{{commission_id}}/hold", 0, "", "agent", body={"reason": "check"}).send(world)


def mark_paid(world: World) -> None:
    Case("POST", f"{API}/payouts/withdrawals/{{withdrawal_id}}/mark-paid", 0, "", "agent").send(world)


def disable_endpoint(world: World) -> None:
    WebhookEndpoint.objects.filter(pk=world.ids["endpoint"]).update(enabled=False)


ENDPOINT = {"url": "https://hooks.example.com/new", "event_types": ["sale.created"]}
PERIOD = {"since": "2020-01-01", "until": "2099-01-01"}


def stranger_program(world: World) -> dict[str, Any]:
    return {"program_id": world.ids["stranger_program"]}


def not_seen(method: str, path: str, **fields: Any) -> Case:
    """A program_id the key may not see, as a list's filter or in a body: 404."""
    if method == "GET":
        return Case(
            method,
            API + path,
            404,
            "a program the key cannot see",
            "agent",
            query=lambda w: {**stranger_program(w), **fields},
        )
    return Case(
        method,
        API + path,
        404,
        "a program the key cannot see",
        "agent",
        body=lambda w: {**stranger_program(w), **fields},
    )


CASES: list[Case] = [
    not_seen("GET", "/partners"),
    not_seen("POST", "/partners", name="Ada"),
    not_seen("GET", "/links"),
    Case(
        "POST",
        f"{API}/links",
        404,
        "an unknown partner",
        "agent",
        body=lambda w: {"program_id": w.ids["program"], "partner_id": w.ids["unknown"]},
    ),
    not_seen("GET", "/events", type="sale"),
    not_seen("GET", "/commissions"),
    not_seen("GET", "/payouts/balances"),
    not_seen("GET", "/webhooks/endpoints"),
    not_seen("POST", "/webhooks/endpoints", **ENDPOINT),
    not_seen("GET", "/webhooks/events"),
    *agent_cases("GET", "/me", None),
    *agent_cases("GET", "/programs", "programs:read", bad_query={"limit": "0"}),
    *agent_cases("GET", "/programs/{program_id}", "programs:read"),
    *agent_cases("GET", "/programs/{program_id}/performance", "programs:read", bad_query={"dateFrom": "yesterday"}),
    *agent_cases("GET", "/programs/{program_id}/flagged-clicks", "events:read", bad_query={"kind": "nope"}),
    *agent_cases("GET", "/programs/{program_id}/fraud-rules", "programs:read"),
    *agent_cases(
        "PATCH",
        "/programs/{program_id}/fraud-rules/{rule}",
        "programs:write",
        body={"enabled": False},
        bad_body={},
        other_body={"enabled": True},
    ),
    Case(
        "PATCH",
        f"{API}/programs/{{program_id}}/fraud-rules/{{rule}}",
        404,
        "unknown rule",
        "agent",
        body={"enabled": False},
        url=API + "/programs/{program}/fraud-rules/nope",
    ),
    *agent_cases("DELETE", "/programs/{program_id}/fraud-rules/{rule}", "programs:write"),
    *agent_cases("GET", "/partners", "partners:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST", "/partners", "partners:write", ok=201, body={"name": "Ada"}, bad_body={}, other_body={"name": "Grace"}
    ),
    *agent_cases("GET", "/partners/{partner_id}", "partners:read"),
    *agent_cases(
        "PATCH",
        "/partners/{partner_id}",
        "partners:write",
        body={"name": "Grace"},
        bad_body={},
        other_body={"name": "Ada"},
    ),
    *agent_cases(
        "POST",
        "/partners/{partner_id}/enrollments",
        "partners:write",
        body=lambda w: {"program_id": w.ids["program"]},
        bad_body={},
        other_body=lambda w: {"program_id": w.ids["program2"]},
    ),
    Case(
        "POST",
        f"{API}/partners/{{partner_id}}/enrollments",
        201,
        "a new enrolment",
        "agent",
        body=lambda w: {"program_id": w.ids["program2"]},
    ),
    *agent_cases("GET", "/links", "links:read", bad_query={"active": "maybe"}),
    *agent_cases(
        "POST",
        "/links",
        "links:write",
        ok=201,
        body=lambda w: {"program_id": w.ids["program"], "partner_id": w.ids["partner"]},
        bad_body={},
        other_body=lambda w: {"program_id": w.ids["program"], "partner_id": w.ids["partner"], "short_link": "other"},
    ),
    Case(
        "POST",
        f"{API}/links",
        409,
        "short link taken",
        "agent",
        body=lambda w: {
            "program_id": w.ids["program"],
            "partner_id": w.ids["partner"],
            "short_link": w.ids["short_link"],
        },
    ),
    *agent_cases("POST", "/links/{link_id}/deactivate", "links:write"),
    *agent_cases("GET", "/events", "events:read", query={"type": "sale"}, bad_query={"type": "visit"}),
    *agent_cases("GET", "/commissions", "commissions:read", bad_query={"status": "lost"}),
    *agent_cases("GET", "/commissions/{commission_id}", "commissions:read"),
    *agent_cases("POST", "/commissions/{commission_id}/approve", "commissions:write"),
    *agent_cases(
        "POST",
        "/commissions/{commission_id}/hold",
        "commissions:write",
        body={"reason": "check"},
        bad_body={"reason": 5},
    ),
    *agent_cases(
        "POST",
        "/commissions/{commission_id}/release",
        "commissions:write",
        body={"reason": "fine"},
        bad_body={"reason": 5},
        before=hold,
    ),
    *agent_cases(
        "POST",
        "/commissions/{commission_id}/void",
        "commissions:write",
        body={"reason": "fraud"},
        bad_body={},
        other_body={"reason": "other"},
    ),
    *agent_cases("GET", "/payouts/balances", "payouts:read", bad_query={"limit": "0"}),
    *agent_cases("GET", "/payouts/withdrawals", "payouts:read", bad_query={"status": "lost"}),
    *agent_cases("POST", "/payouts/withdrawals/{withdrawal_id}/mark-paid", "payouts:write"),
    Case(
        "POST", f"{API}/payouts/withdrawals/{{withdrawal_id}}/mark-paid", 409, "already paid", "agent", before=mark_paid
    ),
    *agent_cases("GET", "/webhooks/endpoints", "webhooks:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST",
        "/webhooks/endpoints",
        "webhooks:write",
        ok=201,
        body=ENDPOINT,
        bad_body={},
        other_body={**ENDPOINT, "description": "other"},
    ),
    *agent_cases("GET", "/webhooks/endpoints/{endpoint_id}", "webhooks:read"),
    *agent_cases(
        "PATCH",
        "/webhooks/endpoints/{endpoint_id}",
        "webhooks:write",
        body={"description": "orders"},
        bad_body={},
        other_body={"description": "other"},
    ),
    *agent_cases("DELETE", "/webhooks/endpoints/{endpoint_id}", "webhooks:write"),
    *agent_cases("POST", "/webhooks/endpoints/{endpoint_id}/rotate-secret", "webhooks:write"),
    *agent_cases("GET", "/webhooks/endpoints/{endpoint_id}/deliveries", "webhooks:read", bad_query={"status": "lost"}),
    *agent_cases(
        "POST",
        "/webhooks/endpoints/{endpoint_id}/resend-failed",
        "webhooks:write",
        body=PERIOD,
        bad_body={},
        other_body={**PERIOD, "since": "2021-01-01"},
    ),
    Case(
        "POST",
        f"{API}/webhooks/endpoints/{{endpoint_id}}/resend-failed",
        409,
        "endpoint disabled",
        "agent",
        body=PERIOD,
        before=disable_endpoint,
    ),
    *agent_cases("GET", "/webhooks/deliveries/{delivery_id}/attempts", "webhooks:read", bad_query={"limit": "0"}),
    *agent_cases("POST", "/webhooks/deliveries/{delivery_id}/resend", "webhooks:write"),
    Case(
        "POST",
        f"{API}/webhooks/deliveries/{{delivery_id}}/resend",
        409,
        "endpoint disabled",
        "agent",
        before=disable_endpoint,
    ),
    *agent_cases("GET", "/webhooks/events", "webhooks:read", bad_query={"type": "nope"}),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_answer_is_the_documented_one(case: Case, world: World, schema: dict[str, Any]) -> None:
    case_check(case, world, schema)
