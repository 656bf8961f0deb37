"""The browser tracker: its script (GET /js/svc-tracker.js) and the keyless routes only it calls,
POST /api/v1/track/visit, GET /api/v1/track/config and GET /api/v1/track/discount (an extension: svc.getDiscount()).
Cross-origin access comes from CORS_URLS_REGEX."""

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_safe
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api import ratelimit
from core.api.fields import IdField, spec_messages
from core.api.schema import PLATFORM_ERROR
from groups.models import DiscountDuration, DiscountType
from programs.api.base import CallLoggedApi
from programs.models import LeadAuth

from ..services.discount import visitor_discount_get
from ..services.tracker import VisitInput, tracker_config_get, visit_record
from .first_party import FIRST_PARTY_COOKIE_HEADER, first_party_visit
from .serializers import TypedInputSerializer, additional_data_field, optional_text, validate_additional_data
from .views import COMMON_ERRORS

TRACKER_PATH = Path(settings.BASE_DIR) / "static" / "js" / "svc-tracker.js"
# An hour keeps page loads off this server; the ETag makes the revalidation after it a cheap 304.
TRACKER_CACHE_CONTROL = "public, max-age=3600"
TRACKER_CONTENT_TYPE = "application/javascript; charset=utf-8"
# How long a browser may reuse a program's config; the tracker also keeps it for the tab's session.
CONFIG_CACHE_CONTROL = "private, max-age=300"


@cache
def tracker_script() -> tuple[bytes, str]:
    """The script and its quoted ETag, read from disk once per process."""
    body = TRACKER_PATH.read_bytes()
    return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _etag_matches(if_none_match: str, etag: str) -> bool:
    # If-None-Match uses the weak comparison: W/"x" matches "x".
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag in tags


@require_safe
def tracker_script_get(request: HttpRequest) -> HttpResponse:
    body, etag = tracker_script()
    if _etag_matches(request.headers.get("If-None-Match", ""), etag):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(body, content_type=TRACKER_CONTENT_TYPE)
    response["ETag"] = etag
    response["Cache-Control"] = TRACKER_CACHE_CONTROL
    return response


VISIT_OK = inline_serializer(
    "VisitResult",
    fields={"success": serializers.BooleanField(), "visit_id": serializers.IntegerField()},
)
CONFIG_OK = inline_serializer(
    "TrackerConfig",
    fields={
        "success": serializers.BooleanField(),
        "program_id": serializers.IntegerField(),
        "cookie_window_days": serializers.IntegerField(help_text="Lifetime of the svc_click_id cookie, days"),
        "lead_auth": serializers.ChoiceField(LeadAuth.choices),
        "decorate_payment_links": serializers.BooleanField(
            help_text="The program has a connected Stripe account: write the click id as client_reference_id"
        ),
        "link_aliases": serializers.ListField(
            child=serializers.CharField(),
            help_text=(
                "Query parameters the program accepts like via, in order (e.g. an old platform's fpr): with neither "
                "aff nor via in the page URL, the tracker sends a click when the first of these is present. Empty: off"
            ),
        ),
    },
)


class ProgramIdInputSerializer(serializers.Serializer[Any]):
    program_id = IdField(
        error_messages={
            **spec_messages(messages.UNKNOWN_PROGRAM_ID),
            "required": messages.PROGRAM_ID_REQUIRED,
            "null": messages.PROGRAM_ID_REQUIRED,
        }
    )

    def validate_program_id(self, value: str | int) -> str | int:
        if isinstance(value, str) and not value.strip():
            raise serializers.ValidationError(messages.PROGRAM_ID_REQUIRED)
        return value


class VisitTrackApi(CallLoggedApi):
    rate_scope = ratelimit.TRACK_VISIT
    failure_message = messages.VISIT_TRACKING_FAILED

    class InputSerializer(ProgramIdInputSerializer, TypedInputSerializer[VisitInput]):
        page_url = optional_text("page_url", 4096)
        page_title = optional_text("page_title", 1024)
        referrer_url = optional_text("referrer_url", 4096)
        click_id = optional_text("click_id", 255)
        session_id = optional_text("session_id", 255)
        additional_data = additional_data_field()

        def validate_additional_data(self, value: dict[str, Any]) -> dict[str, Any]:
            return validate_additional_data(value)

    @extend_schema(
        summary="Record a page visit (sent by the browser tracker on every page load)",
        request=InputSerializer,
        parameters=[FIRST_PARTY_COOKIE_HEADER],
        responses={200: OpenApiResponse(VISIT_OK), **COMMON_ERRORS},
    )
    def post(self, request: Request) -> Response:
        visit = visit_record(data=self.InputSerializer(data=request.data).validated_input())
        self.log_program_id = visit.program_id
        response = Response({"success": True, "visit_id": visit.pk})
        first_party_visit(request._request, response, visit)
        return response


class TrackerConfigGetApi(CallLoggedApi):
    rate_scope = ratelimit.TRACK_CONFIG
    failure_message = messages.TRACKER_CONFIG_FAILED

    class InputSerializer(ProgramIdInputSerializer):
        pass

    @extend_schema(
        summary="What the browser tracker needs to know about a program",
        parameters=[OpenApiParameter("program_id", int, required=True)],
        responses={
            200: OpenApiResponse(CONFIG_OK),
            404: OpenApiResponse(PLATFORM_ERROR, description="Unknown program_id"),
            **COMMON_ERRORS,
        },
    )
    def get(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        config = tracker_config_get(program_id=serializer.validated_data["program_id"])
        self.log_program_id = config["program_id"]
        return Response(config, headers={"Cache-Control": CONFIG_CACHE_CONTROL})


DISCOUNT_OK = inline_serializer(
    "VisitorDiscount",
    fields={
        "discount": inline_serializer(
            "GroupDiscount",
            allow_null=True,
            help_text="The discount of the visitor's partner's group; null for none (or an unknown click)",
            fields={
                "type": serializers.ChoiceField(DiscountType.choices),
                "percent": serializers.DecimalField(
                    max_digits=5, decimal_places=2, allow_null=True, help_text='type percent: e.g. "10.00"'
                ),
                "amount_cents": serializers.IntegerField(
                    allow_null=True, help_text="type amount: in the smallest unit of currency"
                ),
                "currency": serializers.CharField(),
                "duration": serializers.ChoiceField(DiscountDuration.choices),
                "duration_months": serializers.IntegerField(allow_null=True, help_text="duration repeating: months"),
                "group": serializers.CharField(help_text="The group's name"),
            },
        )
    },
)


class TrackerDiscountGetApi(CallLoggedApi):
    """Extension (not in the spec): the customer discount the visitor's partner offers, for the page to show it
    or pass it to checkout. Keyless like the config: it gives nothing but the group's public discount."""

    rate_scope = ratelimit.TRACK_DISCOUNT
    failure_message = messages.TRACKER_DISCOUNT_FAILED
    # Answered reads are not logged: a shop may ask on every page; refusals still are, for readiness.
    log_answered = False

    class InputSerializer(ProgramIdInputSerializer):
        pass

    @extend_schema(
        summary="Extension: the discount the visitor's partner offers (the tracker's svc.getDiscount())",
        parameters=[
            OpenApiParameter("program_id", int, required=True),
            OpenApiParameter("click_id", str, required=False, description="The visitor's svc_click_id cookie"),
        ],
        responses={
            200: OpenApiResponse(DISCOUNT_OK),
            404: OpenApiResponse(PLATFORM_ERROR, description="Unknown program_id"),
            **COMMON_ERRORS,
        },
    )
    def get(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        # Any click id is looked up as sent: one that is no click (too long, unknown) answers null.
        program_id, discount = visitor_discount_get(
            program_id=serializer.validated_data["program_id"], click_id=request.query_params.get("click_id", "")
        )
        self.log_program_id = program_id
        return Response({"discount": discount}, headers={"Cache-Control": CONFIG_CACHE_CONTROL})
