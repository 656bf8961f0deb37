"""Size limits, methods and unstorable text outside the body, on every API route: a body over
DATA_UPLOAD_MAX_MEMORY_SIZE is 413 (it was RequestDataTooBig, a 500), a wrong method is 405 (sale and refund
gave no error.code), a URL or headers over core/limits.py are 414 and 431, and NUL in a query parameter or a
header is 400 (PostgreSQL stores no NUL). All in the route's envelope, nothing stored. The same limits against
a real gunicorn are in test_bad_input_served.py."""

import pytest
from django.conf import settings

from core import limits, messages
from core.api.envelopes import PROTOCOL_ERROR_CODES
from tests.core.bad_input_routes import ALL_ROUTES, JSON_ROUTES, Route, make_caller, route_id
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db

BODY_LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
TOO_LARGE = messages.PAYLOAD_TOO_LARGE.format(limit=BODY_LIMIT)
URI_TOO_LONG = messages.URI_TOO_LONG.format(limit=limits.MAX_URL_BYTES)
HEADERS_TOO_LARGE = messages.HEADERS_TOO_LARGE.format(
    fields=limits.MAX_HEADER_FIELDS, field_bytes=limits.MAX_HEADER_FIELD_BYTES, total_bytes=limits.MAX_HEADER_BYTES
)
SALE = Route("post", "/api/v1/track/sale", "key", coded=True)
REFUND = Route("post", "/api/v1/track/refund", "key", coded=True)


def json_of_size(size: int) -> str:
    """A JSON object of exactly `size` bytes."""
    padding = size - len('{"page_url": ""}')
    return '{"page_url": "' + "a" * padding + '"}'


def assert_code(route: Route, response, status: int) -> None:
    """Sale, refund and typed routes name the status in error.code; other platform routes carry none."""
    error = response.json()["error"]
    if route.coded or route.typed:
        assert error["code"] == PROTOCOL_ERROR_CODES[status]
    else:
        assert "code" not in error


class TestBodySize:
    @pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
    def test_a_body_over_the_limit_is_413(self, route):
        caller = make_caller()
        response = caller.send(route, json_of_size(BODY_LIMIT + 1))
        caller.assert_refused(route, response, 413, TOO_LARGE)
        assert_code(route, response, 413)

    @pytest.mark.parametrize("route", [SALE, REFUND], ids=route_id)
    def test_sale_and_refund_name_it_payload_too_large(self, route):
        caller = make_caller()
        response = caller.send(route, json_of_size(3 * 1024 * 1024))
        assert response.json() == {
            "data": None,
            "error": {
                "status": 413,
                "name": "PayloadTooLargeError",
                "message": TOO_LARGE,
                "details": {},
                "code": "payload_too_large",
            },
        }
        assert response["X-Request-ID"]

    @pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
    def test_a_content_length_over_the_limit_is_413_whatever_follows(self, route):
        caller = make_caller()
        response = caller.send(route, '{"page_url": "x"}', CONTENT_LENGTH=str(BODY_LIMIT + 1))
        caller.assert_refused(route, response, 413, TOO_LARGE)

    @pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
    def test_an_unreadable_content_length_reads_as_no_body(self, route):
        caller = make_caller()
        response = caller.send(route, '{"page_url": "x"}', CONTENT_LENGTH="lots")
        assert 400 <= response.status_code < 500 or response.status_code == 200
        assert response.status_code != 413

    def test_a_body_at_the_limit_reaches_the_route(self):
        caller = make_caller()
        route = Route("post", "/api/v1/track/click", "none")
        response = caller.send(route, json_of_size(BODY_LIMIT))
        # The click's own check answers: page_url is too long, affiliate_url missing.
        caller.assert_refused(route, response, 400, messages.AFFILIATE_URL_REQUIRED)

    @pytest.mark.parametrize("route", [SALE, Route("post", "/api/v1/track/click", "none")], ids=route_id)
    def test_without_the_middleware_the_handler_still_answers_413(self, settings, route):
        """RequestDataTooBig raised while a view reads its body (another server in front, a middleware
        removed) is the same 413, not the 500 it was."""
        settings.MIDDLEWARE = [name for name in settings.MIDDLEWARE if not name.endswith("RequestLimitsMiddleware")]
        caller = make_caller()
        response = caller.send(route, json_of_size(BODY_LIMIT + 1))
        caller.assert_refused(route, response, 413, TOO_LARGE)

    def test_the_stripe_webhook_answers_413_in_json(self):
        caller = make_caller()
        response = caller.client(Route("post", "/", "none")).post(
            "/webhooks/stripe", json_of_size(BODY_LIMIT + 1), content_type="application/json"
        )
        assert response.status_code == 413
        assert response.json()["error"]["message"] == TOO_LARGE


class TestMethod:
    @pytest.mark.parametrize("route", [SALE, REFUND], ids=route_id)
    @pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
    def test_sale_and_refund_answer_405_with_a_code(self, route, method):
        caller = make_caller()
        response = caller.send(Route(method, route.path, "key", coded=True))
        assert response.status_code == 405
        assert response.json() == {
            "data": None,
            "error": {
                "status": 405,
                "name": "MethodNotAllowedError",
                "message": messages.METHOD_NOT_ALLOWED.format(method=method.upper()),
                "details": {},
                "code": "method_not_allowed",
            },
        }
        assert "POST" in response["Allow"]

    @pytest.mark.parametrize("route", [SALE, REFUND], ids=route_id)
    def test_the_method_is_checked_before_the_key(self, api_client, route):
        response = api_client.get(route.path)
        assert response.status_code == 405
        assert response.json()["error"]["code"] == "method_not_allowed"

    @pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
    def test_every_route_answers_405_in_its_envelope(self, route):
        caller = make_caller()
        wrong = Route("put", route.path, route.auth, route.coded, route.typed)
        response = caller.send(wrong)
        caller.assert_refused(wrong, response, 405, messages.METHOD_NOT_ALLOWED.format(method="PUT"))
        assert_code(route, response, 405)


class TestUrlAndHeaders:
    @pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
    def test_a_url_over_the_limit_is_414(self, route):
        caller = make_caller()
        separator = "&" if "?" in route.path else "?"
        long_route = Route(route.method, route.path + separator + "q=" + "a" * limits.MAX_URL_BYTES, route.auth)
        response = caller.send(long_route)
        caller.assert_refused(route, response, 414, URI_TOO_LONG)
        assert_code(route, response, 414)

    @pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
    @pytest.mark.parametrize(
        "headers",
        [
            {f"HTTP_X_FILL_{n}": "x" for n in range(limits.MAX_HEADER_FIELDS + 1)},
            {"HTTP_X_FILL": "x" * limits.MAX_HEADER_FIELD_BYTES},
            {f"HTTP_X_FILL_{n}": "x" * 8000 for n in range(9)},
        ],
        ids=["too many", "one too large", "too large in all"],
    )
    def test_headers_over_the_limits_are_431(self, route, headers):
        caller = make_caller()
        response = caller.send(route, **headers)
        caller.assert_refused(route, response, 431, HEADERS_TOO_LARGE)
        assert_code(route, response, 431)

    def test_a_page_over_the_limits_gets_json_too(self):
        caller = make_caller()
        response = caller.send(Route("get", "/?q=" + "a" * limits.MAX_URL_BYTES, "session"))
        assert response.status_code == 414
        assert response.json()["error"]["message"] == URI_TOO_LONG


class TestNulOutsideTheBody:
    @pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
    @pytest.mark.parametrize("query", ["x=%00", "page=1%00", "%00=1", "state=abc%00def"])
    def test_nul_in_a_query_parameter_is_400(self, route, query):
        caller = make_caller()
        separator = "&" if "?" in route.path else "?"
        response = caller.send(Route(route.method, route.path + separator + query, route.auth))
        caller.assert_refused(route, response, 400)
        assert response.json()["error"]["message"].endswith("must not contain NUL characters")

    @pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
    @pytest.mark.parametrize(
        ("header", "name"),
        [("HTTP_USER_AGENT", "User-Agent"), ("HTTP_REFERER", "Referer"), ("HTTP_X_REQUEST_ID", "X-Request-Id")],
    )
    def test_nul_in_a_header_is_400(self, route, header, name):
        caller = make_caller()
        response = caller.send(route, **{header: "Mozilla/5.0\x00evil"})
        caller.assert_refused(route, response, 400, messages.HEADER_NOT_STORABLE.format(name=name))

    def test_a_nul_session_cookie_is_400_before_any_session_lookup(self, api_client, django_assert_num_queries):
        program = make_caller().program
        with django_assert_num_queries(0):
            response = api_client.get(f"/api/tracking/status/{program.pk}", HTTP_COOKIE="sessionid=" + "\x00" * 32)
        assert response.status_code == 400
        assert response.json()["error"]["message"] == messages.HEADER_NOT_STORABLE.format(name="Cookie")


@pytest.mark.postgres
def test_a_click_with_a_nul_user_agent_is_400_not_a_database_error():
    caller = make_caller()
    link = caller.program.links.get()
    route = Route("post", "/api/v1/track/click", "none")
    body = f'{{"affiliate_url": "https://shop.test/?aff={link.short_link}"}}'
    response = caller.send(route, body, HTTP_USER_AGENT="Mozilla\x00")
    caller.assert_refused(route, response, 400, messages.HEADER_NOT_STORABLE.format(name="User-Agent"))
    assert not ClickEvent.objects.exists()


class TestRateLimitHeaders:
    """A rate-limited route's responses all carry X-RateLimit-*, refusals before the route included; those
    refusals are not calls of the route and do not count."""

    CLICK = Route("post", "/api/v1/track/click", "none")

    @pytest.mark.parametrize(
        ("route", "extra"),
        [
            (CLICK, {"CONTENT_LENGTH": str(BODY_LIMIT + 1)}),
            (Route("post", "/api/v1/track/click?q=" + "a" * limits.MAX_URL_BYTES, "none"), {}),
            (CLICK, {"HTTP_X_FILL": "x" * limits.MAX_HEADER_FIELD_BYTES}),
            (CLICK, {"HTTP_USER_AGENT": "\x00"}),
            (Route("get", "/api/v1/track/click", "none"), {}),
            (Route("delete", "/api/v1/track/sale", "key"), {}),
        ],
        ids=["413", "414", "431", "400 NUL header", "405", "405 on sale"],
    )
    def test_refusals_before_the_route_carry_the_headers_and_count_nothing(self, route, extra):
        caller = make_caller()
        first = caller.send(route, '{"page_url": "x"}', **extra)
        second = caller.send(route, '{"page_url": "x"}', **extra)
        assert 400 <= first.status_code < 500
        assert first["X-RateLimit-Limit"] == str(60 if "click" in route.path else 120)
        assert first["X-RateLimit-Remaining"] == second["X-RateLimit-Remaining"] == first["X-RateLimit-Limit"]
        assert int(first["X-RateLimit-Reset"]) > 0
