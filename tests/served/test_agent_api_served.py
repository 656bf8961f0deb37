"""The agent API (/api/agent/v1/) on the real server, 3 workers: what only shows when calls land on different
processes. One rate-limit bucket per key for the whole instance, an Idempotency-Key that writes once whichever
worker takes the retries, a revocation no worker outlives, and raw keys that never reach the server's log. On the
embedded default and with REDIS_URL."""

import base64
import os
import re
from collections import Counter
from typing import Any

import httpx
import pytest
import redis

from agent_api import messages
from agent_api.models import AgentAuditEntry
from cli_api.services import cli_token_create
from core import messages as core_messages
from programs.models import AGENT_SCOPES, AgentKey, Partner, Workspace
from programs.services import agent_key_create, agent_key_revoke
from tests.factories import MembershipFactory, PartnerFactory, ProgramFactory, WorkspaceFactory
from tests.helpers import assert_rate_limited, platform_error

from .conftest import Served, key_has_a_full_window, send_concurrently

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

API = "/api/agent/v1"
LIMIT = 120  # agent calls a minute per key (core.api.ratelimit.AGENT)


def issued_key(workspace: Workspace, name: str = "served agent") -> tuple[AgentKey, str]:
    """A fresh agent key whose rate-limit window has time left for a whole test."""
    while True:
        key, raw = agent_key_create(workspace=workspace, name=name, scopes=AGENT_SCOPES)
        if key_has_a_full_window(raw):
            return key, raw
        key.delete()


def client_for(served: Served, raw_key: str) -> httpx.Client:
    return httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {raw_key}"}, timeout=20)


def log_offset(served: Served) -> int:
    return served.log.stat().st_size


def log_since(served: Served, offset: int) -> str:
    with served.log.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def pids_since(served: Served, offset: int, path: str) -> set[str]:
    """Worker pids that logged a response to `path` after `offset` (the access log starts with the worker's pid)."""
    pattern = re.compile(rf'^<(\d+)> \d+ "[A-Z]+ {re.escape(path)}')
    return {match.group(1) for line in log_since(served, offset).splitlines() if (match := pattern.match(line))}


def until_two_workers_answered(served: Served, send, rounds: int = 4) -> list[httpx.Response]:
    """Concurrent rounds of 10 calls to the agent's programs route until at least two workers have logged one.

    The master hands connections to whichever worker accepts first; on a loaded machine one worker can take a
    whole round, and the property under test is about what a second worker answers. 40 calls at most, inside
    the key's limit of 120."""
    offset = log_offset(served)
    responses: list[httpx.Response] = []
    for _ in range(rounds):
        responses += send_concurrently(send, 10, threads=5)
        if len(pids_since(served, offset, f"{API}/programs")) >= 2:
            return responses
    raise AssertionError(f"{rounds * 10} concurrent calls were all answered by one worker")


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The platform envelope's error (data null; status, name, message, details), checked for its shape."""
    assert response.headers["Content-Type"].startswith("application/json"), response.text[:200]
    body = response.json()
    assert body["data"] is None, body
    error = body["error"]
    assert error["status"] == response.status_code, body
    assert isinstance(error["name"], str) and error["name"], body
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["details"], dict), body
    return error


# --- 1. one bucket per key for the whole instance ---------------------------------------------------------------


def test_of_130_calls_on_one_key_exactly_120_pass_whichever_worker_counts_them(any_served: Served):
    workspace = WorkspaceFactory.create()
    _, busy = issued_key(workspace, "busy")
    _, other = issued_key(workspace, "other")
    offset = log_offset(any_served)

    with client_for(any_served, busy) as client:
        responses = send_concurrently(lambda n: client.get(f"{API}/me"), 130, threads=8)

    assert Counter(response.status_code for response in responses) == {200: LIMIT, 429: 10}
    passed = [response for response in responses if response.status_code == 200]
    assert {response.headers["X-RateLimit-Limit"] for response in passed} == {str(LIMIT)}
    # One atomic count across the workers: each call that passed took its own place in the bucket.
    assert sorted(int(response.headers["X-RateLimit-Remaining"]) for response in passed) == list(range(LIMIT))
    for refused in (response for response in responses if response.status_code == 429):
        assert_rate_limited(refused)
        assert refused.headers["X-RateLimit-Limit"] == str(LIMIT)
    assert len(pids_since(any_served, offset, f"{API}/me")) >= 2

    with client_for(any_served, other) as client:
        response = client.get(f"{API}/me")
    assert response.status_code == 200, response.text
    assert response.headers["X-RateLimit-Remaining"] == str(LIMIT - 1)


# --- 2. an Idempotency-Key writes once across workers ---------------------------------------------------------------


def test_six_concurrent_retries_of_one_create_write_one_partner_and_one_audit_entry(any_served: Served):
    workspace = WorkspaceFactory.create()
    ProgramFactory.create(workspace=workspace)
    key, raw = issued_key(workspace)
    body = {"name": "Acme Reviews", "email": "team@acme-reviews.example"}
    headers = {"Idempotency-Key": "create-acme-reviews-1"}
    offset = log_offset(any_served)

    with client_for(any_served, raw) as client:
        responses = send_concurrently(lambda n: client.post(f"{API}/partners", json=body, headers=headers), 6, 6)

    assert [response.status_code for response in responses] == [201] * 6, [r.text for r in responses]
    partner = Partner.objects.get(workspace=workspace)
    assert {response.json()["data"]["id"] for response in responses} == {partner.pk}
    # The same JSON each time (a replay comes from a jsonb column, which may order the keys its own way).
    assert all(response.json() == responses[0].json() for response in responses)
    assert AgentAuditEntry.objects.filter(workspace=workspace).count() == 1
    entry = AgentAuditEntry.objects.get(key=key)
    assert (entry.action, entry.object_id, entry.idempotency_key) == (
        "partner.create",
        str(partner.pk),
        headers["Idempotency-Key"],
    )
    replayed = Counter(response.headers.get("Idempotent-Replayed") for response in responses)
    assert replayed == {"true": 5, None: 1}
    assert len(pids_since(any_served, offset, f"{API}/partners")) >= 2


# --- 3. revocation ------------------------------------------------------------------------------------------------


def test_a_revoked_key_is_refused_at_once_by_every_worker(any_served: Served):
    workspace = WorkspaceFactory.create()
    ProgramFactory.create(workspace=workspace)
    key, raw = issued_key(workspace)

    with client_for(any_served, raw) as client:
        warm = until_two_workers_answered(any_served, lambda n: client.get(f"{API}/programs"))
        assert {response.status_code for response in warm} == {200}

        assert agent_key_revoke(key=key)  # committed: the test runs outside a transaction

        refused = until_two_workers_answered(any_served, lambda n: client.get(f"{API}/programs"))
    expected = platform_error(401, "UnauthorizedError", messages.KEY_REVOKED, messages.CODE_KEY_REVOKED)
    assert {response.status_code for response in refused} == {401}
    assert all(response.json() == expected for response in refused)


# --- 4. other credentials, and keys never logged ------------------------------------------------------------------


def test_a_program_key_or_a_cli_login_token_is_the_wrong_credential(any_served: Served):
    workspace = WorkspaceFactory.create()
    program = ProgramFactory(workspace=workspace)  # with its raw keys beside the model's fields
    login_token = cli_token_create(user=MembershipFactory.create(workspace=workspace).user)[1]
    refusals = {
        program.raw_api_key: messages.PROGRAM_KEY_REFUSED,
        program.raw_test_api_key: messages.PROGRAM_KEY_REFUSED,
        login_token: messages.LOGIN_TOKEN_REFUSED,
    }
    for credential, message in refusals.items():
        with client_for(any_served, credential) as client:
            response = client.get(f"{API}/programs")
        assert response.status_code == 401
        assert response.json() == platform_error(401, "UnauthorizedError", message, messages.CODE_WRONG_CREDENTIAL)
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="agent"'


def test_the_raw_agent_key_appears_nowhere_in_the_servers_log(any_served: Served):
    workspace = WorkspaceFactory.create()
    program = ProgramFactory.create(workspace=workspace)
    PartnerFactory.create(workspace=workspace)
    key, raw = issued_key(workspace)
    offset = log_offset(any_served)
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", f"{API}/me", {}),
        ("GET", f"{API}/programs", {}),
        ("GET", f"{API}/programs/{program.pk}", {}),
        ("GET", f"{API}/programs/999999999", {}),  # 404
        ("GET", f"{API}/partners", {"params": {"limit": "0"}}),  # 400
        ("POST", f"{API}/partners", {"json": {"name": "Logged Nowhere"}, "headers": {"Idempotency-Key": "log-1"}}),
        ("POST", f"{API}/partners", {"json": {"name": "Other"}, "headers": {"Idempotency-Key": "log-1"}}),  # 409
        ("POST", f"{API}/partners", {"content": b"{", "headers": {"Content-Type": "application/json"}}),  # 400
    ]

    with client_for(any_served, raw) as client:
        statuses = [client.request(method, path, **options).status_code for method, path, options in calls]
        assert statuses == [200, 200, 200, 404, 400, 201, 409, 400]
        agent_key_revoke(key=key)
        assert client.get(f"{API}/me").status_code == 401

    logged = log_since(any_served, offset)
    assert f"{API}/partners" in logged  # the calls are in this stretch of the log
    secret = raw.removeprefix("agt_")
    assert raw not in logged and secret not in logged
    if any_served.redis_url:
        stored = " ".join(map(str, redis.Redis.from_url(any_served.redis_url).keys("ratelimit:*")))
        assert secret not in stored


# --- 5. hostile input -------------------------------------------------------------------------------------------

# Random bytes as a cursor, NUL left out (a NUL in a query value has its own cases).
_RANDOM = os.urandom(48).replace(b"\x00", b"\x01")
JSON = {"Content-Type": "application/json"}
HOSTILE: list[tuple[str, str, str, dict[str, Any], int]] = [
    # (id, method, path, httpx options, status)
    (
        "idempotency key of 256",
        "POST",
        "/partners",
        {"json": {"name": "A"}, "headers": {"Idempotency-Key": "k" * 256}},
        400,
    ),
    (
        "idempotency key of 9000",
        "POST",
        "/partners",
        {"json": {"name": "A"}, "headers": {"Idempotency-Key": "k" * 9000}},
        431,
    ),
    (
        "not JSON",
        "POST",
        "/partners",
        {"content": b"{'name': 'A',", "headers": JSON},
        400,
    ),
    ("text/plain", "POST", "/partners", {"content": b"name=A", "headers": {"Content-Type": "text/plain"}}, 400),
    ("form body", "POST", "/partners", {"data": {"name": "A"}}, 400),
    ("a list body", "POST", "/partners", {"json": [{"name": "A"}]}, 400),
    ("2 MB body", "POST", "/partners", {"json": {"name": "A" * 2_000_000}}, 400),
    (
        "3 MB body",
        "POST",
        "/partners",
        {"content": b"[" + b"1," * 1_500_000 + b"1]", "headers": JSON},
        413,
    ),
    (
        "deep JSON",
        "POST",
        "/partners",
        {"content": b"[" * 100_000 + b"]" * 100_000, "headers": JSON},
        400,
    ),
    ("NUL in a name", "POST", "/partners", {"json": {"name": "Acme\x00Reviews"}}, 400),
    ("NUL in cursor", "GET", "/partners", {"params": {"cursor": "aWQ6\x001"}}, 400),
    ("NUL in limit", "GET", "/partners", {"params": {"limit": "1\x00"}}, 400),
    ("NUL in a filter", "GET", "/commissions", {"params": {"status": "paid\x00"}}, 400),
    ("NUL in since", "GET", "/events", {"params": {"type": "click", "since": "2026-01-01\x00"}}, 400),
    ("limit 1e309", "GET", "/partners", {"params": {"limit": "1e309"}}, 400),
    ("limit -1", "GET", "/programs", {"params": {"limit": "-1"}}, 400),
    ("URL of 9000", "GET", "/programs", {"params": {"limit": "9" * 9000}}, 414),
    ("DELETE", "DELETE", "/partners", {}, 405),
    ("cursor of random bytes", "GET", "/partners", {"params": {"cursor": _RANDOM.decode("latin-1")}}, 400),
    (
        "cursor of random base64",
        "GET",
        "/programs",
        {"params": {"cursor": base64.urlsafe_b64encode(_RANDOM).decode()}},
        400,
    ),
    (
        "cursor of a huge id",
        "GET",
        "/programs",
        {"params": {"cursor": base64.urlsafe_b64encode(b"id:" + b"9" * 400).decode()}},
        400,
    ),
]


# Refused by core.middleware.RequestLimitsMiddleware before any agent view runs.
SIZE_REFUSALS = ("idempotency key of 9000", "3 MB body", "URL of 9000")


def hostile_answers(served: Served) -> dict[str, httpx.Response]:
    workspace = WorkspaceFactory.create()
    ProgramFactory.create(workspace=workspace)
    _, raw = issued_key(workspace)
    with client_for(served, raw) as client:
        return {case: client.request(method, f"{API}{path}", **options) for case, method, path, options, _ in HOSTILE}


def test_hostile_input_is_a_4xx_in_the_platform_envelope_never_a_5xx(any_served: Served):
    offset = log_offset(any_served)
    answers = hostile_answers(any_served)

    assert {case: answer.status_code for case, answer in answers.items()} == {
        case: status for case, _, _, _, status in HOSTILE
    }
    pinned = {
        "idempotency key of 256": messages.IDEMPOTENCY_KEY_INVALID,
        "not JSON": core_messages.MALFORMED_JSON,
        "text/plain": core_messages.CONTENT_TYPE_NOT_JSON,
        "form body": core_messages.CONTENT_TYPE_NOT_JSON,
        "limit 1e309": messages.LIMIT_INVALID,
        "cursor of random bytes": messages.CURSOR_INVALID,
        "cursor of random base64": messages.CURSOR_INVALID,
    }
    for case, answer in answers.items():
        error = error_of(answer)
        assert error["message"] == pinned.get(case, error["message"]), case
        if case not in SIZE_REFUSALS:  # those: see the test below
            assert isinstance(error.get("code"), str) and error["code"], (case, error)
            assert answer.status_code != 400 or error["code"] == "invalid_request", (case, error)
    assert "Traceback" not in log_since(any_served, offset)
    assert not Partner.objects.exists()


def test_size_refusals_on_agent_routes_carry_an_error_code(served: Served):
    answers = hostile_answers(served)
    codes = {case: error_of(answers[case]).get("code") for case in SIZE_REFUSALS}
    assert codes == {
        "idempotency key of 9000": "headers_too_large",
        "3 MB body": "payload_too_large",
        "URL of 9000": "uri_too_long",
    }
