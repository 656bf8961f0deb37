"""Hostile JSON bodies on every route that reads one: each is refused by the one parser
(core/api/parsers.py) with a 400 in the route's envelope, and nothing is stored. Before the parser, deep
nesting raised RecursionError (500), NaN and duplicate keys reached the services, and NUL or a lone
surrogate reached PostgreSQL as a DataError (500)."""

import json

import pytest

from core import messages
from core.api.parsers import MAX_JSON_DEPTH, parse_json_body
from core.errors import BadRequestError
from tests.core.bad_input_routes import JSON_ROUTES, make_caller, route_id
from tracking.models import SaleEvent

pytestmark = pytest.mark.django_db

TOO_DEEP = messages.JSON_TOO_DEEP.format(depth=MAX_JSON_DEPTH)
NOT_FINITE = messages.JSON_NOT_FINITE


def nested(depth: int, leaf: str = "1") -> str:
    """`depth` arrays inside one another around `leaf`."""
    return "[" * depth + leaf + "]" * depth


def not_storable(field: str) -> str:
    return messages.TEXT_NOT_STORABLE.format(field=field)


# A body, and the message it is refused with. Raw text: json.dumps could not even write some of these.
HOSTILE_BODIES = {
    "nested 1,000 deep (3 KB)": ('{"additional_data": ' + nested(1000) + "}", TOO_DEEP),
    "nested 100,000 deep": (nested(100_000), TOO_DEEP),
    "objects nested past the cap": ('{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), TOO_DEEP),
    "line_items past the cap": ('{"line_items": ' + nested(MAX_JSON_DEPTH) + "}", TOO_DEEP),
    "NaN": ('{"amount_cents": NaN}', NOT_FINITE),
    "Infinity": ('{"amount_cents": Infinity}', NOT_FINITE),
    "-Infinity": ('{"tax_cents": -Infinity}', NOT_FINITE),
    "1e309": ('{"amount_cents": 1e309}', NOT_FINITE),
    "duplicate key": (
        '{"transaction_id": "a", "transaction_id": "b"}',
        messages.JSON_DUPLICATE_KEY.format(key='"transaction_id"'),
    ),
    "NUL in a string": ('{"page_url": "https://shop.test/\\u0000"}', not_storable("page_url")),
    "lone surrogate in a string": ('{"transaction_id": "txn_\\ud800"}', not_storable("transaction_id")),
    "NUL in a key": ('{"a\\u0000": 1}', not_storable("a key of the request body")),
    "NUL in a line_items key": ('{"line_items": [{"sku\\u0000": "x"}]}', not_storable("a key of line_items[0]")),
    "surrogate in a line_items value": ('{"line_items": [{"sku": "\\udfff"}]}', not_storable("line_items[0].sku")),
    "NUL in additional_data": ('{"additional_data": {"note": "\\u0000"}}', not_storable("additional_data.note")),
    "NUL as a string top level": ('"\\u0000"', not_storable("request body")),
    "invalid UTF-8": (b'{"transaction_id": "\xff\xfe"}', messages.MALFORMED_JSON),
    "UTF-16": ('{"transaction_id": "t"}'.encode("utf-16"), messages.MALFORMED_JSON),
    "not JSON": ("{transaction_id: t}", messages.MALFORMED_JSON),
    "truncated": ('{"transaction_id": "t"', messages.MALFORMED_JSON),
    "an integer of 5,000 digits": ('{"amount_cents": ' + "9" * 5000 + "}", messages.MALFORMED_JSON),
}


# On SQLite these would be stored; on PostgreSQL they were a DataError (500).
POSTGRES_ERRORS = ["NUL in a string", "lone surrogate in a string", "NUL in a line_items key", "NUL in additional_data"]


@pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
@pytest.mark.parametrize("case", [case for case in HOSTILE_BODIES if case not in POSTGRES_ERRORS])
def test_it_refuses_a_hostile_body_with_400_in_the_route_envelope(route, case):
    body, message = HOSTILE_BODIES[case]
    caller = make_caller()
    response = caller.send(route, body)
    caller.assert_refused(route, response, 400, message)


@pytest.mark.postgres
@pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
@pytest.mark.parametrize("case", POSTGRES_ERRORS)
def test_it_refuses_text_postgresql_cannot_store(route, case):
    body, message = HOSTILE_BODIES[case]
    caller = make_caller()
    response = caller.send(route, body)
    caller.assert_refused(route, response, 400, message)


@pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "12", "null", "true", "[]"])
def test_a_body_that_is_not_an_object_is_a_400(route, body):
    caller = make_caller()
    response = caller.send(route, body)
    caller.assert_refused(route, response, 400)


@pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_body_that_is_not_json_is_a_400(route, content_type):
    caller = make_caller()
    response = caller.send(route, "transaction_id=t&amount_cents=1", content_type=content_type)
    caller.assert_refused(route, response, 400)


@pytest.mark.parametrize("route", JSON_ROUTES, ids=route_id)
@pytest.mark.parametrize("body", ["", "{}", "   "])
def test_an_empty_body_is_a_4xx(route, body):
    caller = make_caller()
    response = caller.send(route, body)
    assert 400 <= response.status_code < 500 or (route.method == "patch" and response.status_code == 200)
    if response.status_code != 200:
        caller.assert_refused(route, response, response.status_code)


class TestParser:
    def test_the_cap_itself_is_accepted(self):
        assert parse_json_body(nested(MAX_JSON_DEPTH).encode()) is not None
        assert parse_json_body(('{"a": ' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH).encode())["a"]

    def test_one_level_more_is_refused(self):
        with pytest.raises(BadRequestError, match="nest"):
            parse_json_body(nested(MAX_JSON_DEPTH + 1).encode())

    def test_scalars_do_not_count_as_a_level(self):
        assert parse_json_body(nested(MAX_JSON_DEPTH, '"text"').encode())

    def test_it_keeps_finite_floats_big_integers_and_unicode(self):
        body = {"rate": 12.5, "amount": 2**80, "name": "Ünïcödé 😀 ١²", "nested": {"list": [None, True, -1e308]}}
        assert parse_json_body(json.dumps(body).encode()) == body
        assert parse_json_body(json.dumps(body, ensure_ascii=False).encode()) == body

    def test_a_valid_surrogate_pair_is_one_character_and_accepted(self):
        assert parse_json_body(b'{"emoji": "\\ud83d\\ude00"}') == {"emoji": "😀"}

    def test_a_long_flat_body_is_parsed_quickly(self):
        body = json.dumps({"line_items": [{"sku": f"s{i}", "qty": i} for i in range(20_000)]}).encode()
        assert len(parse_json_body(body)["line_items"]) == 20_000


def test_a_sale_with_line_items_at_the_cap_is_recorded(api_client):
    """The cap refuses attacks, not real bodies: deep line_items within it are stored as sent."""
    caller = make_caller()
    line_items = json.loads(nested(MAX_JSON_DEPTH - 1))
    body = {"transaction_id": "txn_deep", "amount_cents": 1000, "customer_key": "user_1", "line_items": line_items}
    response = caller.client(JSON_ROUTES[2]).post("/api/v1/track/sale", body, format="json")
    assert response.status_code == 200, response.content
    assert SaleEvent.objects.get().line_items == line_items
