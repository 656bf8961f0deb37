"""The errors every route shares, sent to every operation of the contract surfaces: 414 (a URL over the limit), 431
(a header over the limit), 413 (a body over the limit), 429 (the route's bucket spent) and 500 (a failure nobody
expected, once the caller is authenticated), each answer checked against what the published description says of that
status on that route."""

from dataclasses import replace
from typing import Any

import pytest
from django.conf import settings as django_settings
from rest_framework.views import APIView

from core import limits
from tracking.api import lean

from .cases import Case, case_check
from .schema import published_schema
from .test_coverage import ALL_CASES
from .world import World

pytestmark = pytest.mark.django_db

LONG_QUERY = {"q": "a" * limits.MAX_URL_BYTES}
LARGE_HEADER = {"HTTP_X_FILL": "x" * limits.MAX_HEADER_FIELD_BYTES}
LARGE_BODY = {"page_url": "a" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}


def first_successes() -> list[Case]:
    """Each operation's first success case: the request the shared errors are variations of."""
    chosen: dict[tuple[str, str], Case] = {}
    for case in ALL_CASES:
        if 200 <= case.status < 300:
            chosen.setdefault((case.method, case.path), case)
    return list(chosen.values())


def with_query(case: Case, extra: dict[str, str]) -> Case:
    query = case.query

    def merged(world: World) -> dict[str, Any]:
        return {**((query(world) if callable(query) else query) or {}), **extra}

    return replace(case, query=merged)


def protocol_cases() -> list[Case]:
    cases = []
    for case in first_successes():
        cases.append(replace(with_query(case, LONG_QUERY), status=414, label="URL too long"))
        cases.append(replace(case, status=431, label="header too large", headers={**case.headers, **LARGE_HEADER}))
        if case.method != "GET":
            cases.append(replace(case, status=413, label="body too large", body=LARGE_BODY))
        cases.append(replace(case, status=429, label="rate limited"))
        cases.append(replace(case, status=500, label="unexpected failure"))
    return cases


CASES = protocol_cases()
SUCCESS = {(case.method, case.path): case.status for case in first_successes()}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_answer_is_the_documented_one(
    case: Case, world: World, schema: dict[str, Any], settings, monkeypatch
) -> None:
    documented = published_schema()["paths"][case.path][case.method.lower()]["responses"]
    if str(case.status) not in documented:
        # A route that documents no such limit must not have one: the request goes through.
        case = replace(case, status=SUCCESS[(case.method, case.path)], label=f"{case.label}, no such limit")
    if case.label.startswith("rate limited"):
        settings.RATELIMIT_SCALE = 1e-9  # one call a minute in every bucket
        spend = case.before

        def spend_the_bucket(world: World) -> None:
            replace(case, before=spend, status=0).send(world)

        case = replace(case, before=spend_the_bucket)
    if case.status == 500:
        spend = case.before

        def fail_after_authentication(world: World) -> None:
            if spend is not None:
                spend(world)
            # DRF checks throttles (this project has none) right after authentication and permissions; the click
            # and sale routes' common calls skip DRF (tracking/api/lean.py) and fail in their services.
            monkeypatch.setattr(APIView, "check_throttles", failing)
            monkeypatch.setattr(lean, "click_record", failing)
            monkeypatch.setattr(lean, "sale_record", failing)

        case = replace(case, before=fail_after_authentication)
    case_check(case, world, schema)


def failing(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("a failure nobody expected")
