"""A program with only its default group answers every spec call as it did before groups existed: the answers of
the tracking, dashboard and command-line contract cases (tests/contract) are compared, key order and every
string included, with those recorded on the commit before groups (34325f1). What differs from run to run (ids,
times, random tokens) is replaced by a marker on both sides (`normalized`).

The world's program also holds a group nobody is in, with a tier rule, a bonus and a coupon code
(tests/contract/world.py): every partner is in the default group, and the answers hold all the same.

Two differences are expected, and only these: explain (ours, not the spec's) adds `group` and `recorded` to a
commission's policy, and, for a program with coupon codes, the coupon rule to the end of its attribution rules,
documented in the OpenAPI; and the message refusing an unknown event type lists every type, now with the extension
partner.group_changed.

Recorded on PostgreSQL, whose jsonb orders an event's data keys as SQLite does not: run on PostgreSQL only. To record
again (on a commit whose answers are the reference): SVC_RECORD_DEFAULT_GROUP_ANSWERS=1 pytest this."""

import json
import os
import re
from pathlib import Path
from typing import Any

import factory
import pytest

from tests import factories

from .cases import Case
from .test_cli_contracts import CASES as CLI_CASES
from .test_dashboard_contracts import CASES as DASHBOARD_CASES
from .test_tracking_contracts import CASES as TRACKING_CASES
from .world import World

RECORDED = Path(__file__).with_name("default_group_answers.json")
RECORDING = os.environ.get("SVC_RECORD_DEFAULT_GROUP_ANSWERS") == "1"
SPEC_CASES: list[Case] = [*TRACKING_CASES, *DASHBOARD_CASES, *CLI_CASES]

TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
TOKEN = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_.:/=+-]{16,}$")
ID_KEY = re.compile(r"(^id$|_id$|Id$|^ids?$|^cursor$)")
MASKED_KEY = re.compile(r"\*{4,}[A-Za-z0-9_-]{4}")
# Values made afresh by every run: a timing, a sign-in code and the address carrying its state.
VOLATILE = frozenset({"duration_ms", "user_code", "login_url"})


def normalized(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {name: normalized(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [normalized(item, key) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if key in VOLATILE:
        return "<volatile>"
    if isinstance(value, int) and ID_KEY.search(key):
        return "<id>"
    if isinstance(value, str):
        value = MASKED_KEY.sub("****<last4>", value)
        if TIME.match(value):
            return "<time>"
        if TOKEN.match(value) or (ID_KEY.search(key) and value):
            return "<token>"
        # An address or a row named in a sentence carries a database id, whatever ran before in the process.
        return re.sub(r"\d+", "<n>", value) if any(mark in value for mark in "/#=") else value
    return value


def answer(case: Case, world: World) -> dict[str, Any]:
    response = case.send(world)
    content_type = response.get("Content-Type", "")
    body: Any = response.content.decode(errors="replace")
    if "json" in content_type and body:
        body = normalized(json.loads(body))
    return {"status": response.status_code, "content_type": content_type, "body": body}


def recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_text()) if RECORDED.exists() else {}


@pytest.fixture(scope="module", autouse=True)
def _factory_sequences_from_zero(django_db_setup: None) -> None:
    """Names the factories number ("Program 0", "code0") start again, so this module's world is named as it was
    when recorded whatever other modules made before it in the same process. Runs before the module's world."""
    for factory_class in vars(factories).values():
        if isinstance(factory_class, type) and issubclass(factory_class, factory.django.DjangoModelFactory):
            if factory_class._meta.model is not None:
                factory_class.reset_sequence()


_RECORDED = recorded()
_CASES = SPEC_CASES if RECORDING else [case for case in SPEC_CASES if case.id in _RECORDED]


def expected_changes(case: Case, got: dict[str, Any]) -> dict[str, Any]:
    """The answer with the two expected differences (the module's docstring) taken back out."""
    body = got["body"]
    if "explain" in case.path and isinstance(body, dict):
        explained = body.get("data", body)
        policy = ((explained or {}).get("commission") or {}).get("policy")
        if isinstance(policy, dict):
            policy.pop("group", None)
            policy.pop("recorded", None)
        attribution = (explained or {}).get("attribution") or {}
        if isinstance(attribution.get("rules"), list):
            attribution["rules"] = [
                rule for rule in attribution["rules"] if rule.get("rule") not in ("coupon_code", "promotion_code")
            ]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and str(error.get("message", "")).startswith("Unknown event type"):
        error["message"] = error["message"].replace(", partner.group_changed", "")
    return got


@pytest.mark.postgres
@pytest.mark.parametrize("case", _CASES, ids=[case.id for case in _CASES])
def test_a_default_group_program_answers_as_before_groups(case: Case, world: World) -> None:
    got = answer(case, world)
    if RECORDING:
        answers = recorded()
        answers[case.id] = got
        RECORDED.write_text(json.dumps(answers, indent=1, sort_keys=False) + "\n")
        return
    assert expected_changes(case, got) == _RECORDED[case.id]


def test_the_recorded_answers_cover_the_spec_cases_of_before() -> None:
    assert RECORDING or len(_RECORDED) >= 150
