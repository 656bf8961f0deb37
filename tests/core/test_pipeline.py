"""One request pipeline: every API call's steps live once, and the DRF views and the click and sale routes' fast path
(tracking/api/lean.py) call the same functions. A header's name and a request-log row each have one home, so a change
to either is made once; tests/tracking/test_lean_routes.py proves the two paths answer alike.

The apps' modules and config/ are scanned (every top-level package with an apps.py); migrations and tests are left
out, as in tests/core/test_app_dependencies.py."""

import ast
from pathlib import Path

from django.http import HttpRequest
from django.test import RequestFactory
from rest_framework.response import Response

from core.api import ratelimit
from core.api.base import BaseApi, answer_headers_set, plain_json_answer
from core.errors import NotFoundError

ROOT = Path(__file__).resolve().parents[2]
RATE_LIMIT_HOME = "core/api/ratelimit.py"
# The one function that makes a request-log row from a call, and the one command that times the row itself.
LOG_ROW_CALLERS = {"programs/api/base.py:call_logged", "programs/management/commands/request_log_cost.py:handle"}


def _production_files() -> list[Path]:
    packages = [path.parent for path in sorted(ROOT.glob("*/apps.py"))] + [ROOT / "config"]
    return [
        path
        for package in packages
        for path in sorted(package.rglob("*.py"))
        if "migrations" not in path.parts and not path.name.startswith("test")
    ]


def test_the_rate_limit_headers_are_named_in_one_module():
    naming = {
        str(path.relative_to(ROOT))
        for path in _production_files()
        for name in ratelimit.HEADER_NAMES
        if name.lower() in path.read_text().lower()
    }
    assert naming == {RATE_LIMIT_HOME}


def _callers_of(function: str) -> set[str]:
    callers = set()
    for path in _production_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    called = call.func
                    name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                    if name == function:
                        callers.add(f"{path.relative_to(ROOT)}:{node.name}")
    return callers


def test_one_function_makes_a_request_log_row():
    assert _callers_of("api_call_record") == LOG_ROW_CALLERS


def test_the_fast_routes_and_the_drf_views_call_the_same_steps():
    assert _callers_of("call_logged") == {"programs/api/base.py:dispatch", "tracking/api/lean.py:_answered"}
    headers_set = {"core/api/base.py:finalize_response", "core/api/base.py:plain_json_answer"}
    assert _callers_of("answer_headers_set") == headers_set
    assert _callers_of("plain_json_answer") == {"tracking/api/lean.py:_answered"}
    # DRF calls the exception handler itself (REST_FRAMEWORK's EXCEPTION_HANDLER names it).
    assert _callers_of("api_exception_handler") == {"core/api/base.py:plain_json_answer"}
    assert _callers_of("rate_limit_check") == {"core/api/base.py:initial", "core/api/base.py:plain_json_answer"}


def test_an_answer_keeps_the_rate_limit_headers_it_was_raised_with():
    response = Response(status=429, headers={ratelimit.REMAINING_HEADER: "0"})
    usage = ratelimit.RateUsage(limit=60, remaining=5, reset_at=1_700_000_000)
    answer_headers_set(response, usage=usage, request_id="req_1")
    assert (response[ratelimit.LIMIT_HEADER], response[ratelimit.REMAINING_HEADER]) == ("60", "0")
    assert (response[ratelimit.RESET_HEADER], response["X-Request-ID"]) == ("1700000000", "req_1")
    answer_headers_set(quiet := Response(), usage=None, request_id=None)
    assert not quiet.has_header("X-Request-ID") and not quiet.has_header(ratelimit.LIMIT_HEADER)


class _MissingApi(BaseApi):
    def post(self, request: object) -> Response:
        raise NotFoundError("Not found")


def _request() -> HttpRequest:
    request = RequestFactory().post("/x", b"{}", content_type="application/json")
    request.request_id = "req_2"  # type: ignore[attr-defined]  # RequestIdMiddleware's, as the routes have it
    return request


def test_a_plain_answer_is_the_drf_views_answer_headers_included():
    through_drf = _MissingApi.as_view()(_request())
    through_drf.render()

    def missing() -> tuple[Response, int]:
        raise NotFoundError("Not found")

    plain, extra = plain_json_answer(_request(), _MissingApi, missing)
    assert extra is None
    assert (plain.status_code, plain.content, dict(plain.headers)) == (
        through_drf.status_code,
        through_drf.content,
        dict(through_drf.headers),
    )
    assert (plain.status_code, plain["Allow"], plain["X-Request-ID"]) == (404, "POST, OPTIONS", "req_2")
    answered, extra = plain_json_answer(_request(), _MissingApi, lambda: (Response({"ok": True}), 7))
    assert (answered.status_code, extra, answered.content) == (200, 7, b'{"ok":true}')
