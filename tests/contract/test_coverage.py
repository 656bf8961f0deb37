"""The contract tables cover the published description: every operation of the contract surfaces has cases, a
success among them, and a case for each client error it documents (or a reason here why none can be sent)."""

import re
from collections import defaultdict
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

from .cases import Case
from .schema import SURFACE_PREFIXES, published_schema, surface_operations
from .test_agent_contracts import CASES as AGENT_CASES
from .test_cli_contracts import CASES as CLI_CASES
from .test_dashboard_contracts import CASES as DASHBOARD_CASES
from .test_tracking_contracts import CASES as TRACKING_CASES

ALL_CASES: list[Case] = [*TRACKING_CASES, *DASHBOARD_CASES, *CLI_CASES, *AGENT_CASES]
CLIENT_ERRORS = {"400", "401", "403", "404", "409", "410", "422"}

# Documented client errors no request can bring about today, and why.
UNREACHABLE: dict[tuple[str, str], dict[str, str]] = {
    ("GET", "/api/agent/v1/me"): {
        "403": "every agent route documents 403 (tests/agent_api/test_agent_openapi.py); /me needs no scope",
    },
}


def exercised() -> dict[tuple[str, str], set[str]]:
    statuses: dict[tuple[str, str], set[str]] = defaultdict(set)
    for case in ALL_CASES:
        statuses[(case.method, case.path)].add(str(case.status))
    return statuses


def test_every_documented_operation_has_cases_and_every_case_a_documented_operation(db):
    # Left out of the description and of the surfaces, as they have no JSON contract of ours: GET /js/svc-tracker.js
    # (JavaScript), POST /webhooks/stripe (Stripe's request) and the dashboard's HTML pages; each has its own tests.
    assert set(exercised()) == surface_operations(published_schema())


def url_paths(patterns: list[Any], prefix: str = "") -> set[str]:
    """Every routed path, in the description's spelling ({name} for a path parameter)."""
    found = set()
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found |= url_paths(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            found.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
    return found


def test_every_routed_path_of_the_surfaces_is_in_the_description(db):
    routed = {path for path in url_paths(get_resolver().url_patterns) if path.startswith(SURFACE_PREFIXES)}
    assert routed == set(published_schema()["paths"]) & routed
    assert routed == {path for path in published_schema()["paths"] if path.startswith(SURFACE_PREFIXES)}


def test_every_operation_has_a_success_and_its_documented_client_errors(db):
    schema = published_schema()
    missing = {}
    for (method, path), statuses in exercised().items():
        documented = set(schema["paths"][path][method.lower()]["responses"])
        if not any(status.startswith("2") for status in statuses):
            missing[(method, path)] = "no success"
            continue
        left = (documented & CLIENT_ERRORS) - statuses - set(UNREACHABLE.get((method, path), {}))
        if left:
            missing[(method, path)] = sorted(left)
    assert missing == {}
