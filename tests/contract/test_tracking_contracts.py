"""The program-key API (/api/v1/track/*, /api/v1/programs/me/*) and the browser tracker's routes: every
operation's success and the errors an integration meets (400 bad input, 401 no or unknown key, 403 a program_id
that is not the key's, 404 unknown, 409 a duplicate sale, 410 a paused link, 422 an unsupported currency), each
answer checked against the published description."""

from decimal import Decimal
from typing import Any

import pytest

from groups.models import PartnerGroup
from programs.models import PartnerProgram, ReferralLink

from .cases import Case, case_check
from .world import World

pytestmark = pytest.mark.django_db

TRACK = "/api/v1/track"
NUL = {"x": "a\x00b"}  # a query value that cannot be stored: refused with 400 before any route's own checks


def click(world: World, **fields: Any) -> dict[str, Any]:
    return {"affiliate_url": f"https://{world.ids['domain']}/pricing?aff={world.ids['short_link']}", **fields}


def pause_link(world: World) -> None:
    ReferralLink.objects.filter(pk=world.ids["link"]).update(is_active=False)


def another_programs_id(world: World) -> dict[str, Any]:
    return {"test_mode": True, "program_id": world.ids["stranger_program"]}


def partner_in_a_discount_group(world: World) -> None:
    """The world's partner (the click's) in a group whose customers get 10% off for 3 months."""
    group = PartnerGroup.objects.create(
        program_id=world.ids["program"],
        name="Contract VIP",
        slug="contract-vip",
        discount_type="percent",
        discount_percent=Decimal("10"),
        discount_duration="repeating",
        discount_duration_months=3,
    )
    PartnerProgram.objects.filter(program_id=world.ids["program"], partner_id=world.ids["partner"]).update(group=group)


def discount_query(world: World) -> dict[str, Any]:
    return {"program_id": world.ids["program"], "click_id": world.ids["click_id"]}


def sale(world: World, **fields: Any) -> dict[str, Any]:
    return {"transaction_id": "txn_new", "amount_cents": 4900, "customer_key": world.ids["customer_key"], **fields}


CASES: list[Case] = [
    Case("POST", f"{TRACK}/click", 200, "browser", "anonymous", body=click),
    Case("POST", f"{TRACK}/click", 200, "server", "program_key", body=click),
    Case("POST", f"{TRACK}/click", 200, "test mode", "test_key", body=click),
    Case("POST", f"{TRACK}/click", 400, "no url", "anonymous", body={"affiliate_url": ""}),
    Case(
        "POST",
        f"{TRACK}/click",
        403,
        "another program's id",
        "program_key",
        body=lambda w: click(w, additional_data=another_programs_id(w)),
    ),
    Case("POST", f"{TRACK}/click", 410, "paused link", "anonymous", body=click, before=pause_link),
    Case(
        "POST",
        f"{TRACK}/lead",
        200,
        "success",
        "program_key",
        body=lambda w: {"click_id": w.ids["click_id"], "customer_key": "lead-contract"},
    ),
    Case(
        "POST",
        f"{TRACK}/lead",
        200,
        "test mode",
        "test_key",
        body=lambda w: {"click_id": w.ids["click_id"], "customer_key": "lead-test"},
    ),
    Case("POST", f"{TRACK}/lead", 400, "unknown click", "anonymous", body={"click_id": "nobody"}),
    Case("POST", f"{TRACK}/lead", 401, "unknown key", "bad_key", body={"click_id": "nobody"}),
    Case(
        "POST",
        f"{TRACK}/lead",
        403,
        "another program's id",
        "program_key",
        body=lambda w: {"click_id": w.ids["click_id"], "additional_data": another_programs_id(w)},
    ),
    Case("POST", f"{TRACK}/sale", 200, "attributed", "program_key", body=sale),
    Case("POST", f"{TRACK}/sale", 200, "test mode", "test_key", body={}),
    Case("POST", f"{TRACK}/sale", 400, "no transaction_id", "program_key", body={"amount_cents": 100}),
    Case("POST", f"{TRACK}/sale", 401, "no key", "anonymous", body=sale),
    Case("POST", f"{TRACK}/sale", 401, "unknown key", "bad_key", body=sale),
    Case(
        "POST",
        f"{TRACK}/sale",
        409,
        "duplicate",
        "program_key",
        body=lambda w: sale(w, transaction_id=w.ids["transaction_id"]),
    ),
    Case("POST", f"{TRACK}/sale", 422, "unsupported currency", "program_key", body=lambda w: sale(w, currency="GBP")),
    Case(
        "POST",
        f"{TRACK}/refund",
        200,
        "success",
        "program_key",
        body=lambda w: {"transaction_id": w.ids["transaction_id"]},
    ),
    Case("POST", f"{TRACK}/refund", 200, "test mode", "test_key", body={}),
    Case("POST", f"{TRACK}/refund", 400, "no transaction_id", "program_key", body={"transaction_id": ""}),
    Case("POST", f"{TRACK}/refund", 401, "no key", "anonymous", body={"transaction_id": "x"}),
    Case("POST", f"{TRACK}/refund", 404, "unknown sale", "program_key", body={"transaction_id": "nope"}),
    Case(
        "POST",
        f"{TRACK}/visit",
        200,
        "success",
        "anonymous",
        body=lambda w: {"program_id": w.ids["program"], "page_url": f"https://{w.ids['domain']}/pricing"},
    ),
    Case("POST", f"{TRACK}/visit", 400, "no program", "anonymous", body={}),
    Case("GET", f"{TRACK}/config", 200, "success", "anonymous", query=lambda w: {"program_id": w.ids["program"]}),
    Case("GET", f"{TRACK}/config", 400, "no program_id", "anonymous"),
    Case(
        "GET", f"{TRACK}/config", 404, "unknown program", "anonymous", query=lambda w: {"program_id": w.ids["unknown"]}
    ),
    Case("GET", f"{TRACK}/discount", 200, "no discount", "anonymous", query=discount_query),
    Case(
        "GET",
        f"{TRACK}/discount",
        200,
        "the partner's group's",
        "anonymous",
        query=discount_query,
        before=partner_in_a_discount_group,
    ),
    Case("GET", f"{TRACK}/discount", 400, "no program_id", "anonymous"),
    Case(
        "GET",
        f"{TRACK}/discount",
        404,
        "unknown program",
        "anonymous",
        query=lambda w: {"program_id": w.ids["unknown"]},
    ),
    Case("GET", "/api/v1/programs/me/readiness", 200, "success", "program_key"),
    Case("GET", "/api/v1/programs/me/readiness", 200, "test key", "test_key"),
    Case("GET", "/api/v1/programs/me/readiness", 400, "bad query", "program_key", query=NUL),
    Case("GET", "/api/v1/programs/me/readiness", 401, "no key", "anonymous"),
    Case("GET", "/api/v1/programs/me/analytics/sources", 200, "success", "program_key"),
    Case("GET", "/api/v1/programs/me/analytics/sources", 400, "bad date", "program_key", query={"dateFrom": "x"}),
    Case("GET", "/api/v1/programs/me/analytics/sources", 401, "no key", "anonymous"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_answer_is_the_documented_one(case: Case, world: World, schema: dict[str, Any]) -> None:
    case_check(case, world, schema)
