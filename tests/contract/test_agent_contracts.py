"""The agent API (/api/agent/v1/*): every operation's success and the errors an agent meets (400 bad input, 401
no or unknown key, 403 a key without the route's scope, 404 an id it cannot see, 409 a reused Idempotency-Key or
a state that refuses the write), each answer checked against the published description."""

from collections.abc import Callable
from typing import Any

import pytest

from webhooks.models import WebhookEndpoint

from .cases import Case, case_check, has_id, unknown_id_url
from .world import World

pytestmark = pytest.mark.django_db

API = "/api/agent/v1"
NUL = {"x": "a\x00b"}  # a query value that cannot be stored: refused with 400 before any route's own checks


def agent_case(method: str, path: str, status: int, label: str, **fields: Any) -> Case:
    """A call to API + path by the world's agent key (every scope, the world's programs)."""
    return Case(method, API + path, status, label, "agent", **fields)


def agent_call(method: str, path: str, **fields: Any) -> Callable[[World], None]:
    """A setup step (a case's `before`): the agent's call to API + path sent first, whatever it answers."""

    def send(world: World) -> None:
        agent_case(method, path, 0, "", **fields).send(world)

    return send


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
    sent = {"body": body, "query": query}
    cases = [
        agent_case(method, path, ok, "success", **sent, before=before),
        Case(method, API + path, 401, "no key", "anonymous", **sent),
        Case(method, API + path, 401, "unknown key", "bad_agent", **sent),
    ]
    if scope is not None:
        # A key holding another scope only.
        other = "programs_reader" if scope != "programs:read" else "events_reader"
        cases.append(Case(method, API + path, 403, f"without {scope}", other, **sent))
    if has_id(path):
        cases.append(agent_case(method, path, 404, "unknown id", **sent, url=unknown_id_url(API + path)))
    if bad_body is not None:
        cases.append(agent_case(method, path, 400, "bad body", body=bad_body))
    else:
        cases.append(agent_case(method, path, 400, "bad query", body=body, query=bad_query or NUL))
    if method != "GET":
        cases.append(idempotency_conflict(method, path, body, before, other_body))
    return cases


def idempotency_conflict(method: str, path: str, body: Any, before: Any, other_body: Any) -> Case:
    """A write that succeeded, then its Idempotency-Key sent again with another valid body (a body that fails
    validation is refused with 400 before the key is looked at)."""
    headers = {"HTTP_IDEMPOTENCY_KEY": "contract-retry"}
    if method == "DELETE":
        # A retried DELETE finds nothing left to delete (404): the key is first spent on another request.
        first_call = agent_call("POST", "/partners", body={"name": "Ada"}, headers=headers)
    else:
        first_call = agent_call(method, path, body=body, headers=headers, before=before)
    return agent_case(
        method,
        path,
        409,
        "reused Idempotency-Key",
        body=other_body or {"another": "body"},
        headers=headers,
        before=first_call,
    )


hold = agent_call("POST", "/commissions/{commission_id}/hold", body={"reason": "check"})
mark_paid = agent_call("POST", "/payouts/withdrawals/{withdrawal_id}/mark-paid")
approve_application = agent_call("POST", "/applications/{application_id}/approve")
reject_application = agent_call("POST", "/applications/{application_id}/reject")
confirm_run = agent_call("POST", "/payouts/runs/{run_id}/confirm")
mark_payout_paid = agent_call("POST", "/payouts/payouts/{payout_id}/mark-paid")


def disable_endpoint(world: World) -> None:
    WebhookEndpoint.objects.filter(pk=world.ids["endpoint"]).update(enabled=False)


ENDPOINT = {"url": "https://hooks.example.com/new", "event_types": ["sale.created"]}
PERIOD = {"since": "2020-01-01", "until": "2099-01-01"}


def stranger_program(world: World) -> dict[str, Any]:
    return {"program_id": world.ids["stranger_program"]}


def not_seen(method: str, path: str, **fields: Any) -> Case:
    """A program_id the key may not see, as a list's filter (GET) or in a body: 404."""

    def sent(world: World) -> dict[str, Any]:
        return {**stranger_program(world), **fields}

    where = "query" if method == "GET" else "body"
    return agent_case(method, path, 404, "a program the key cannot see", **{where: sent})


GROUPS = "/programs/{program_id}/groups"
GROUP = GROUPS + "/{group_id}"
PARTNER_GROUP = "/programs/{program_id}/partners/{partner_id}"
CODES = "/programs/{program_id}/coupon-codes"
BONUS = {"name": "Ten sales", "metric": "sales", "threshold": 10, "amount_cents": 1000}
GROUP_CASES: list[Case] = [
    *agent_cases("GET", GROUPS, "groups:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST", GROUPS, "groups:write", ok=201, body={"name": "Silver"}, bad_body={}, other_body={"name": "Bronze"}
    ),
    agent_case("POST", GROUPS, 409, "a name taken", body=lambda w: {"name": w.ids["group_name"].upper()}),
    *agent_cases("GET", GROUP, "groups:read"),
    *agent_cases(
        "PATCH",
        GROUP,
        "groups:write",
        body={"hold_days": 7},
        bad_body={"commission_rate": 0},
        other_body={"hold_days": 8},
    ),
    agent_case(
        "PATCH",
        GROUP,
        400,
        "the default group's terms",
        body={"commission_rate": 30},
        url=API + "/programs/{program}/groups/{default_group}",
    ),
    *agent_cases("DELETE", GROUP, "groups:write"),
    agent_case("DELETE", GROUP, 400, "the default group", url=API + "/programs/{program}/groups/{default_group}"),
    *agent_cases("GET", GROUP + "/tier-rules", "groups:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST",
        GROUP + "/tier-rules",
        "groups:write",
        ok=201,
        body=lambda w: {"target_group_id": w.ids["default_group"], "metric": "sales", "threshold": 20},
        bad_body=lambda w: {"target_group_id": w.ids["group"], "metric": "sales", "threshold": 20},
        other_body=lambda w: {"target_group_id": w.ids["default_group"], "metric": "revenue", "threshold": 20},
    ),
    *agent_cases(
        "PATCH",
        GROUP + "/tier-rules/{rule_id}",
        "groups:write",
        body={"is_active": False},
        bad_body={"is_active": "no"},
        other_body={"is_active": True},
    ),
    *agent_cases("DELETE", GROUP + "/tier-rules/{rule_id}", "groups:write"),
    *agent_cases("GET", GROUP + "/bonuses", "groups:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST",
        GROUP + "/bonuses",
        "groups:write",
        ok=201,
        body=BONUS,
        bad_body={**BONUS, "amount_cents": 0},
        other_body={**BONUS, "threshold": 11},
    ),
    *agent_cases(
        "PATCH",
        GROUP + "/bonuses/{bonus_id}",
        "groups:write",
        body={"is_active": False},
        bad_body={},
        other_body={"is_active": True},
    ),
    *agent_cases("DELETE", GROUP + "/bonuses/{bonus_id}", "groups:write"),
    *agent_cases("GET", PARTNER_GROUP + "/group", "groups:read"),
    agent_case(
        "GET",
        PARTNER_GROUP + "/group",
        400,
        "a partner not enrolled",
        url=API + "/programs/{program2}/partners/{partner}/group",
    ),
    *agent_cases("GET", PARTNER_GROUP + "/group-changes", "groups:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST",
        PARTNER_GROUP + "/group-changes",
        "groups:write",
        ok=201,
        body=lambda w: {"group_id": w.ids["group"]},
        bad_body={"group_id": "gold"},
        other_body=lambda w: {"group_id": w.ids["default_group"]},
    ),
    agent_case(
        "POST",
        PARTNER_GROUP + "/group-changes",
        200,
        "in that group already",
        body=lambda w: {"group_id": w.ids["default_group"]},
    ),
    *agent_cases("GET", CODES, "groups:read", bad_query={"active": "maybe"}),
    *agent_cases(
        "POST",
        CODES,
        "groups:write",
        ok=201,
        body=lambda w: {"partner_id": w.ids["partner"], "code": "JANE20"},
        bad_body=lambda w: {"partner_id": w.ids["partner"], "code": "JANE 20"},
        other_body=lambda w: {"partner_id": w.ids["partner"], "code": "JANE30"},
    ),
    agent_case(
        "POST", CODES, 409, "a code taken", body=lambda w: {"partner_id": w.ids["partner"], "code": w.ids["code"]}
    ),
    *agent_cases("POST", CODES + "/{code_id}/deactivate", "groups:write"),
]


CASES: list[Case] = [
    not_seen("GET", "/partners"),
    not_seen("POST", "/partners", name="Ada"),
    not_seen("GET", "/links"),
    agent_case(
        "POST",
        "/links",
        404,
        "an unknown partner",
        body=lambda w: {"program_id": w.ids["program"], "partner_id": w.ids["unknown"]},
    ),
    not_seen("GET", "/events", type="sale"),
    not_seen("GET", "/commissions"),
    not_seen("GET", "/payouts/balances"),
    not_seen("GET", "/payouts/runs"),
    not_seen("POST", "/payouts/runs", currency="USD"),
    not_seen("GET", "/payouts/payouts"),
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
    agent_case(
        "PATCH",
        "/programs/{program_id}/fraud-rules/{rule}",
        404,
        "unknown rule",
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
    agent_case(
        "POST",
        "/partners/{partner_id}/enrollments",
        201,
        "a new enrolment",
        body=lambda w: {"program_id": w.ids["program2"]},
    ),
    *agent_cases("GET", "/programs/{program_id}/invitations", "partners:read", bad_query={"limit": "0"}),
    *agent_cases(
        "POST",
        "/programs/{program_id}/invitations",
        "partners:write",
        ok=201,
        body={"email": "pat@example.com"},
        bad_body={"email": "not an email"},
        other_body={"email": "sam@example.com"},
    ),
    *agent_cases("GET", "/programs/{program_id}/applications", "partners:read", bad_query={"status": "lost"}),
    *agent_cases("POST", "/applications/{application_id}/approve", "partners:write"),
    agent_case("POST", "/applications/{application_id}/approve", 409, "decided already", before=reject_application),
    *agent_cases("POST", "/applications/{application_id}/reject", "partners:write"),
    agent_case("POST", "/applications/{application_id}/reject", 409, "decided already", before=approve_application),
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
    agent_case(
        "POST",
        "/links",
        409,
        "short link taken",
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
    agent_case("POST", "/payouts/withdrawals/{withdrawal_id}/mark-paid", 409, "already paid", before=mark_paid),
    *agent_cases("GET", "/payouts/runs", "payouts:read", bad_query={"currency": "GBP"}),
    *agent_cases(
        "POST",
        "/payouts/runs",
        "payouts:write",
        ok=201,
        body=lambda w: {"program_id": w.ids["program"], "currency": "USD"},
        bad_body={"program_id": "abc", "currency": "USD"},
        other_body=lambda w: {"program_id": w.ids["program"], "currency": "EUR"},
    ),
    agent_case(
        "POST",
        "/payouts/runs",
        400,
        "a negative minimum",
        body=lambda w: {"program_id": w.ids["program"], "currency": "USD", "minimum_cents": -1},
    ),
    *agent_cases("GET", "/payouts/runs/{run_id}", "payouts:read"),
    *agent_cases("POST", "/payouts/runs/{run_id}/confirm", "payouts:write"),
    agent_case("POST", "/payouts/runs/{run_id}/confirm", 409, "confirmed already", before=confirm_run),
    *agent_cases("GET", "/payouts/payouts", "payouts:read", bad_query={"status": "lost"}),
    *agent_cases("GET", "/payouts/payouts/{payout_id}", "payouts:read"),
    *agent_cases(
        "POST",
        "/payouts/payouts/{payout_id}/mark-paid",
        "payouts:write",
        body={"reference": "PAYPAL-1"},
        bad_body={"reference": None},
        other_body={"reference": "PAYPAL-2"},
    ),
    agent_case("POST", "/payouts/payouts/{payout_id}/mark-paid", 409, "paid already", body={}, before=mark_payout_paid),
    *agent_cases(
        "POST",
        "/payouts/payouts/{payout_id}/mark-failed",
        "payouts:write",
        body={"message": "The PayPal account is closed"},
        bad_body={},
        other_body={"message": "Another reason"},
    ),
    agent_case(
        "POST",
        "/payouts/payouts/{payout_id}/mark-failed",
        409,
        "paid already",
        body={"message": "Too late"},
        before=mark_payout_paid,
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
    agent_case(
        "POST",
        "/webhooks/endpoints/{endpoint_id}/resend-failed",
        409,
        "endpoint disabled",
        body=PERIOD,
        before=disable_endpoint,
    ),
    *agent_cases("GET", "/webhooks/deliveries/{delivery_id}/attempts", "webhooks:read", bad_query={"limit": "0"}),
    *agent_cases("POST", "/webhooks/deliveries/{delivery_id}/resend", "webhooks:write"),
    agent_case("POST", "/webhooks/deliveries/{delivery_id}/resend", 409, "endpoint disabled", before=disable_endpoint),
    *agent_cases("GET", "/webhooks/events", "webhooks:read", bad_query={"type": "nope"}),
    *GROUP_CASES,
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_answer_is_the_documented_one(case: Case, world: World, schema: dict[str, Any]) -> None:
    case_check(case, world, schema)
