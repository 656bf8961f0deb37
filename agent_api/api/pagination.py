"""Cursor pagination for agent lists: newest first by id, the cursor is the last id seen (opaque to callers).
A page is one indexed range scan (`id < cursor ORDER BY id DESC LIMIT n+1`), so page 1,000 costs what page 1 does,
unlike OFFSET."""

import base64
import binascii
from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from rest_framework import serializers

from core.ids import integer_parse

from ..messages import CURSOR_INVALID, LIMIT_INVALID, LIMIT_MAX

M = TypeVar("M", bound=Model)

LIMIT_DEFAULT = 50


def cursor_encode(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"id:{last_id}".encode()).decode().rstrip("=")


def cursor_decode(cursor: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    prefix, _, number = text.partition(":")
    return integer_parse(number, minimum=1) if prefix == "id" else None


class PageQuerySerializer(serializers.Serializer[Any]):
    cursor = serializers.CharField(required=False, help_text="next_cursor of the previous page")
    limit = serializers.CharField(
        required=False, help_text=f"Items per page, 1 to {LIMIT_MAX} (default {LIMIT_DEFAULT})"
    )

    def validate_cursor(self, value: str) -> int:
        last_id = cursor_decode(value)
        if last_id is None:
            raise serializers.ValidationError(CURSOR_INVALID)
        return last_id

    def validate_limit(self, value: str) -> int:
        limit = integer_parse(value, minimum=1, maximum=LIMIT_MAX)
        if limit is None:
            raise serializers.ValidationError(LIMIT_INVALID)
        return limit


def page_of(
    queryset: QuerySet[M],
    *,
    query: dict[str, Any],
    older_than: Callable[[QuerySet[M], int], QuerySet[M]] | None = None,
) -> tuple[list[M], str | None]:
    """One page of the queryset, newest first, and the cursor of the next page (None on the last). `older_than`:
    the queryset keeps an order of its own, newest first by id (tracking.selectors.clicks.marked_clicks), and this
    narrows it to the ids below the cursor."""
    limit: int = query.get("limit", LIMIT_DEFAULT)
    if older_than is None:
        queryset = queryset.order_by("-pk")
        if "cursor" in query:
            queryset = queryset.filter(pk__lt=query["cursor"])
    elif "cursor" in query:
        queryset = older_than(queryset, query["cursor"])
    rows = list(queryset[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], cursor_encode(rows[limit - 1].pk)
    return rows, None
