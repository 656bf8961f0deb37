"""The request log's query and answer, shared by the dashboard's route and the CLI's (svc logs)."""

import re
from typing import Any

from rest_framework import serializers

from core.api.fields import LeanSerializer, spec_messages
from core.api.output import output_serializer
from core.api.query import ID_MAX, InstantField, QueryIdAfterField, QueryIntegerField, query_time_bounds
from programs.calllog import LOGS_PAGE_SIZE_MAX, LogsFilter

LOGS_STATUS = re.compile(r"^[1-5](?:xx|[0-9]{2})$")
LOGS_PAGE_SIZE_DEFAULT = 50


class LogsQuerySerializer(LeanSerializer):
    """Filters and page of the request log: ?status=4xx|404&route=&error_code=&since=&until=&cursor=&limit=,
    or ?after=<id> for the rows newer than one already seen (oldest first)."""

    status = serializers.RegexField(
        LOGS_STATUS,
        required=False,
        error_messages=spec_messages("status must be a class such as 4xx or a status code such as 404"),
        help_text="A status class (2xx, 4xx, 5xx…) or an exact status code",
    )
    route = serializers.CharField(
        required=False,
        max_length=64,
        error_messages=spec_messages("route must be a string of at most 64 characters"),
        help_text="The route's name as logged (e.g. track-sale)",
    )
    error_code = serializers.CharField(
        required=False,
        max_length=64,
        error_messages=spec_messages("error_code must be a string of at most 64 characters"),
        help_text="The error.code answered (e.g. no_attribution)",
    )
    since = InstantField(message="since must be an ISO 8601 date or date-time", required=False)
    until = InstantField(message="until must be an ISO 8601 date or date-time", required=False)
    cursor = QueryIntegerField(
        min_value=1,
        max_value=ID_MAX,
        invalid="cursor must be a positive integer",
        too_big="cursor must be a positive integer",
        required=False,
        help_text="meta.next_cursor of the previous page",
    )
    after = QueryIdAfterField(
        min_value=0,
        max_value=ID_MAX,
        invalid="after must be a non-negative integer",
        too_big="after must be a non-negative integer",
        required=False,
        help_text="Only rows with a greater id, oldest first (to follow the log)",
    )
    limit = QueryIntegerField(
        min_value=1,
        max_value=LOGS_PAGE_SIZE_MAX,
        invalid="limit must be a positive integer",
        too_big=f"limit must be at most {LOGS_PAGE_SIZE_MAX}",
        required=False,
        help_text=f"Rows per page (default {LOGS_PAGE_SIZE_DEFAULT})",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        bounds = query_time_bounds(attrs, "since", "until", reversed_message="since must not be after until")
        if attrs.get("cursor") is not None and attrs.get("after") is not None:
            raise serializers.ValidationError("Give cursor or after, not both")
        return {
            "filters": LogsFilter(
                status=attrs.get("status", ""),
                route=attrs.get("route", ""),
                error_code=attrs.get("error_code", ""),
                since=bounds.start,
                until=bounds.end_inclusive,  # LogsFilter's until is inclusive
            ),
            "cursor": attrs.get("cursor"),
            "after": attrs.get("after"),
            "limit": attrs.get("limit", LOGS_PAGE_SIZE_DEFAULT),
        }


# One row of the log (programs.calllog.api_calls_list), in its columns' order.
class ApiCallLoggedSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    method = serializers.CharField()
    route = serializers.CharField(help_text="The route's name, e.g. track-sale")
    status = serializers.IntegerField()
    error_code = serializers.CharField(help_text="error.code of an error answer, else empty")
    message = serializers.CharField(help_text="error.message of an error answer, else empty")
    request_id = serializers.CharField()
    key_masked = serializers.CharField(help_text="The key's mask only; empty when none was accepted")
    key_mode = serializers.CharField(help_text="live, test or empty")
    latency_ms = serializers.IntegerField()
    excerpt = serializers.DictField(help_text="Allow-listed body fields; an email is masked, never a key")


class ApiCallLogMetaSerializer(serializers.Serializer[Any]):
    next_cursor = serializers.CharField(allow_null=True, help_text="null on the last page")


# A page of the log as both routes answer it: the rows, and the cursor of the next page. The routes render their
# bodies through it, and the OpenAPI description is read from it.
ApiCallLogResultSerializer = output_serializer(
    "ApiCallLogResultSerializer",
    {"data": serializers.ListField(child=ApiCallLoggedSerializer()), "meta": ApiCallLogMetaSerializer()},
)
