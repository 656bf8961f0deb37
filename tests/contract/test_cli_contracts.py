"""The command-line helper API (/api/v1/cli/*): every operation's success and the errors the CLI meets (400 bad
input, 401 no or unknown credential, 403 an account or role that may not, 404 an unknown login or program), each
answer checked against the published description."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from cli_api.tokens import id_token_issue
from programs.keys import key_digest

from .cases import Case, case_check, unknown_id_url
from .world import World

pytestmark = pytest.mark.django_db

CLI = "/api/v1/cli"
NUL = {"x": "a\x00b"}  # a query value that cannot be stored: refused with 400 before any route's own checks


def signed_in(world: World) -> dict[str, str]:
    """The callback body a sign-in in the browser produces for the login under way."""
    state = world.ids["state"]
    return {
        "state": state,
        "id_token": id_token_issue(user_id=world.objects["owner"].pk, session_digest=key_digest(state)),
    }


def suspend_owner(world: World) -> None:
    get_user_model().objects.filter(pk=world.objects["owner"].pk).update(is_active=False)


def complete_login(world: World) -> None:
    Case("POST", f"{CLI}/auth/callback", 0, "", "anonymous", body=signed_in).send(world)


NEW_PROGRAM = {"name": "Shop", "domain": "new-shop.example.com", "commission_type": "percent", "commission_rate": 20}
LISTEN = f"{CLI}/programs/{{program_id}}/webhook-events"
TRIGGER = f"{CLI}/programs/{{program_id}}/webhook-events/trigger"

CASES: list[Case] = [
    Case("POST", f"{CLI}/auth/start", 201, "success", "anonymous"),
    Case("POST", f"{CLI}/auth/start", 400, "bad query", "anonymous", query=NUL),
    Case("POST", f"{CLI}/auth/callback", 200, "success", "anonymous", body=signed_in),
    Case("POST", f"{CLI}/auth/callback", 400, "missing fields", "anonymous", body={}),
    Case(
        "POST",
        f"{CLI}/auth/callback",
        401,
        "bad id_token",
        "anonymous",
        body=lambda w: {"state": w.ids["state"], "id_token": "forged"},
    ),
    Case("POST", f"{CLI}/auth/callback", 403, "suspended account", "anonymous", body=signed_in, before=suspend_owner),
    Case("POST", f"{CLI}/auth/callback", 404, "unknown login", "anonymous", body={"state": "nope", "id_token": "x"}),
    Case("GET", f"{CLI}/auth/poll", 200, "pending", "anonymous", query=lambda w: {"state": w.ids["state"]}),
    Case(
        "GET",
        f"{CLI}/auth/poll",
        200,
        "complete",
        "anonymous",
        query=lambda w: {"state": w.ids["state"]},
        before=complete_login,
    ),
    Case("GET", f"{CLI}/auth/poll", 400, "no state", "anonymous"),
    Case("GET", f"{CLI}/auth/poll", 404, "unknown login", "anonymous", query={"state": "nope"}),
    Case("POST", f"{CLI}/auth/logout", 200, "success", "cli"),
    Case("POST", f"{CLI}/auth/logout", 400, "bad query", "cli", query=NUL),
    Case("POST", f"{CLI}/auth/logout", 401, "no token", "anonymous"),
    Case("POST", f"{CLI}/auth/logout", 401, "unknown token", "bad_token"),
    Case("POST", f"{CLI}/init", 201, "success", "cli", body=NEW_PROGRAM),
    Case("POST", f"{CLI}/init", 400, "bad settings", "cli", body={**NEW_PROGRAM, "commission_rate": "lots"}),
    Case("POST", f"{CLI}/init", 401, "no token", "anonymous", body=NEW_PROGRAM),
    Case("POST", f"{CLI}/init", 403, "not an owner or admin", "cli_member", body=NEW_PROGRAM),
    Case("GET", f"{CLI}/programs", 200, "success", "cli"),
    Case("GET", f"{CLI}/programs", 400, "bad query", "cli", query=NUL),
    Case("GET", f"{CLI}/programs", 401, "no token", "anonymous"),
    Case("GET", f"{CLI}/programs", 403, "suspended account", "cli", before=suspend_owner),
    Case("GET", f"{CLI}/status", 200, "success", "program_key"),
    Case("GET", f"{CLI}/status", 200, "test key", "test_key"),
    Case("GET", f"{CLI}/status", 400, "bad query", "program_key", query=NUL),
    Case("GET", f"{CLI}/status", 401, "no key", "anonymous"),
    Case("GET", f"{CLI}/status", 401, "unknown key", "bad_key"),
    Case("POST", f"{CLI}/test-event", 200, "success", "program_key"),
    Case("POST", f"{CLI}/test-event", 400, "bad query", "program_key", query=NUL),
    Case("POST", f"{CLI}/test-event", 401, "no key", "anonymous"),
    Case("GET", f"{CLI}/logs", 200, "success", "program_key"),
    Case("GET", f"{CLI}/logs", 400, "bad limit", "program_key", query={"limit": "0"}),
    Case("GET", f"{CLI}/logs", 401, "no key", "anonymous"),
    Case(
        "GET",
        f"{CLI}/explain",
        200,
        "a sale",
        "program_key",
        query=lambda w: {"transaction_id": w.ids["transaction_id"]},
    ),
    Case(
        "GET",
        f"{CLI}/explain",
        200,
        "a customer",
        "program_key",
        query=lambda w: {"customer_key": w.ids["customer_key"]},
    ),
    Case("GET", f"{CLI}/explain", 400, "nothing named", "program_key"),
    Case("GET", f"{CLI}/explain", 401, "no key", "anonymous", query={"transaction_id": "x"}),
    Case("GET", f"{CLI}/explain", 404, "unknown sale", "program_key", query={"transaction_id": "nope"}),
    Case("GET", LISTEN, 200, "the cursor", "cli"),
    Case("GET", LISTEN, 200, "events after a cursor", "cli", query={"after": "0"}),
    Case("GET", LISTEN, 400, "bad limit", "cli", query={"after": "0", "limit": "0"}),
    Case("GET", LISTEN, 401, "no token", "anonymous"),
    Case("GET", LISTEN, 403, "suspended account", "cli", before=suspend_owner),
    Case("GET", LISTEN, 404, "unknown program", "cli", url=unknown_id_url(LISTEN)),
    Case("POST", TRIGGER, 201, "success", "cli", body={"type": "sale.created"}),
    Case("POST", TRIGGER, 400, "unknown type", "cli", body={"type": "sale.exploded"}),
    Case("POST", TRIGGER, 401, "no token", "anonymous", body={"type": "sale.created"}),
    Case("POST", TRIGGER, 403, "a member may not send test events", "cli_member", body={"type": "sale.created"}),
    Case("POST", TRIGGER, 404, "unknown program", "cli", body={"type": "sale.created"}, url=unknown_id_url(TRIGGER)),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_answer_is_the_documented_one(case: Case, world: World, schema: dict[str, Any]) -> None:
    case_check(case, world, schema)
