"""The API's one JSON parser (REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]). It refuses, with a 400 in the route's
envelope, every body that would otherwise reach the code as something it cannot handle:

- invalid JSON, or bytes that are not UTF-8 (RFC 8259 allows nothing else);
- nesting deeper than MAX_JSON_DEPTH objects and arrays. Python's json recurses in C and raises RecursionError
  near a thousand levels, and everything downstream (serializers, json.dumps into a JSONField) recurses too; with
  the cap no code path sees more than a few dozen levels;
- NaN, Infinity, -Infinity and numbers that overflow a float (1e309): Python's json accepts them, JSON does not;
- a key given twice in one object: which one wins differs between parsers (and between us and a proxy);
- a string, or an object key, holding NUL or a lone surrogate (\\ud800): PostgreSQL stores neither in text or
  jsonb and answers DataError. The message names the field.
"""

import json
import math
from collections.abc import Iterable, Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from core import messages
from core.api.handler import payload_too_large
from core.errors import BadRequestError
from core.text import storable_text

# Deep enough for any body the API takes (line_items and additional_data are two or three levels deep).
MAX_JSON_DEPTH = 32


class _Refused(ValueError):
    """A body the parser refuses with its own message rather than 'must be valid JSON'."""


def _refuse_constant(name: str) -> float:
    raise _Refused(messages.JSON_NOT_FINITE)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(messages.JSON_NOT_FINITE)
    return value


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(messages.JSON_DUPLICATE_KEY.format(key=json.dumps(key)[:100]))
            seen.add(key)
    return value


def _field_name(path: Iterable[str | int]) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else part)
    return name


def _check_tree(data: Any) -> None:
    """Walks the parsed body without recursion: depth, and text PostgreSQL can store."""
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(data, (), 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            if not storable_text(value):
                raise BadRequestError(messages.TEXT_NOT_STORABLE.format(field=_field_name(path) or "request body"))
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise BadRequestError(messages.JSON_TOO_DEEP.format(depth=MAX_JSON_DEPTH))
        if isinstance(value, list):
            stack.extend((item, (*path, index), depth + 1) for index, item in enumerate(value))
            continue
        for key, item in value.items():
            if not storable_text(key):
                owner = _field_name(path) or "the request body"
                raise BadRequestError(messages.TEXT_NOT_STORABLE.format(field=f"a key of {owner}"))
            stack.append((item, (*path, key), depth + 1))


def parse_json_body(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequestError(messages.MALFORMED_JSON) from None
    try:
        data = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            object_pairs_hook=_object_without_duplicates,
        )
    except _Refused as refused:
        raise BadRequestError(str(refused)) from None
    except RecursionError:
        raise BadRequestError(messages.JSON_TOO_DEEP.format(depth=MAX_JSON_DEPTH)) from None
    except ValueError:  # JSONDecodeError, and integers longer than Python converts
        raise BadRequestError(messages.MALFORMED_JSON) from None
    _check_tree(data)
    return data


class StrictJSONParser(BaseParser):
    media_type = "application/json"
    renderer_class = JSONRenderer

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        # RequestLimitsMiddleware refuses a declared length over the limit; reading at most one byte past it
        # here keeps the limit wherever that middleware did not run (DRF hands JSON parsers the raw stream).
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise payload_too_large()
        return parse_json_body(raw)


def body_object(request: Request) -> dict[str, Any]:
    """The parsed body when it is a JSON object, else an empty one: a route that reads named fields then answers
    for the first field it lacks, rather than for the body's type."""
    data = request.data
    return data if isinstance(data, dict) else {}
