"""The dashboard's JSON API (/api/tracking/*, /api/programs/*, /api/v1/programs/:id/settings), signed in with a
session: every operation's success and the errors the dashboard meets (400 bad input, 401 signed out, 403 not a
member or a role that may not, 404 an unknown program), each answer checked against the published description."""

from typing import Any

import pytest

from .cases import Case, case_check, has_id, unknown_id_url
from .world import World

pytestmark = pytest.mark.django_db

NUL = {"x": "a\x00b"}  # a query value that cannot be stored: refused with 400 before any route's own checks


def dashboard_cases(
    method: str,
    path: str,
    *,
    body: Any = None,
    query: Any = None,
    bad_body: Any = None,
    bad_query: dict[str, str] | None = None,
    member_may: bool = True,
) -> list[Case]:
    cases = [
        Case(method, path, 200, "success", "owner", body=body, query=query),
        Case(method, path, 401, "signed out", "anonymous", body=body, query=query),
        # A signed-in user with no membership in the program's workspace.
        Case(method, path, 403, "not a member", "stranger", body=body, query=query),
    ]
    if not member_may:
        cases.append(Case(method, path, 403, "a member may not", "member", body=body, query=query))
    if has_id(path):
        cases.append(
            Case(method, path, 404, "unknown program", "owner", body=body, query=query, url=unknown_id_url(path))
        )
    if bad_body is not None:
        cases.append(Case(method, path, 400, "bad body", "owner", body=bad_body, query=query))
    else:
        cases.append(Case(method, path, 400, "bad query", "owner", body=body, query=bad_query or NUL))
    return cases


def program_body(**fields: Any) -> Any:
    return lambda world: {"program_id": world.ids["program"], **fields}


CASES: list[Case] = [
    *dashboard_cases("GET", "/api/tracking/status/{program_id}"),
    *dashboard_cases("GET", "/api/tracking/events/{program_id}", bad_query={"pageSize": "0"}),
    *dashboard_cases("GET", "/api/tracking/performance/{program_id}", bad_query={"dateFrom": "yesterday"}),
    *dashboard_cases("GET", "/api/tracking/readiness/{program_id}"),
    *dashboard_cases(
        "GET",
        "/api/tracking/explain/{program_id}",
        query=lambda w: {"transaction_id": w.ids["transaction_id"]},
        bad_query={},
    ),
    *dashboard_cases("GET", "/api/tracking/logs/{program_id}", bad_query={"limit": "0"}),
    *dashboard_cases("POST", "/api/tracking/run-verification/{program_id}", member_may=False),
    *dashboard_cases(
        "POST",
        "/api/tracking/test",
        body=program_body(event_type="click"),
        bad_body=program_body(event_type="visit"),
        member_may=False,
    ),
    Case(
        "POST",
        "/api/tracking/test",
        404,
        "unknown program",
        "owner",
        body=lambda w: {"program_id": w.ids["unknown"], "event_type": "click"},
    ),
    *dashboard_cases(
        "POST",
        "/api/tracking/check-test-events",
        body=program_body(),
        bad_body=program_body(since="soon"),
        member_may=False,
    ),
    Case(
        "POST",
        "/api/tracking/check-test-events",
        404,
        "unknown program",
        "owner",
        body=lambda w: {"program_id": w.ids["unknown"]},
    ),
    *dashboard_cases(
        "POST",
        "/api/programs/{program_id}/regenerate-key",
        body={"mode": "test"},
        bad_body={"mode": "both"},
        member_may=False,
    ),
    *dashboard_cases("GET", "/api/v1/programs/{program_id}/settings"),
    *dashboard_cases(
        "PATCH", "/api/v1/programs/{program_id}/settings", body={"hold_days": 14}, bad_body={}, member_may=False
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_answer_is_the_documented_one(case: Case, world: World, schema: dict[str, Any]) -> None:
    case_check(case, world, schema)
