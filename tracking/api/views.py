from typing import Any

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api import ratelimit
from core.api.envelopes import PROTOCOL_ERROR_CODES
from core.api.parsers import body_object
from core.api.schema import PLATFORM_ERROR, PLATFORM_OR_TYPED_ERROR, RATE_LIMITED, TEST_MODE, TYPED_ERROR
from core.clientip import client_ip
from core.middleware import request_id_of
from programs.api import auth
from programs.api.base import ProgramKeyApi
from tracking.services.click import ClickContext, ClickRecorded, click_record
from tracking.services.common import sale_is_test
from tracking.services.lead import lead_record
from tracking.services.refund import refund_record, refund_test_mode
from tracking.services.sale import sale_record

from .first_party import FIRST_PARTY_COOKIE_HEADER, first_party_click
from .results import click_body, lead_body, refund_body, sale_body
from .serializers import ClickInputSerializer, LeadInputSerializer, RefundInputSerializer, SaleInputSerializer

# Sale and refund errors always carry error.code.
MONEY_ERROR_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    409: "duplicate_transaction",
    422: "unsupported_currency",
    500: "internal_error",
    **PROTOCOL_ERROR_CODES,
}


COMMON_ERRORS = {
    400: OpenApiResponse(PLATFORM_ERROR, description="Invalid request (message says which field)"),
    429: RATE_LIMITED,
    500: OpenApiResponse(PLATFORM_ERROR, description="Server failure; the request id is in X-Request-ID"),
}
MONEY_ERRORS = {
    **COMMON_ERRORS,
    401: OpenApiResponse(
        PLATFORM_OR_TYPED_ERROR, description="unauthorized; a retired key gets api_key_rotation_required (typed)"
    ),
}

CLICK_OK = inline_serializer(
    "ClickResult",
    fields={
        "success": serializers.BooleanField(),
        "click_id": serializers.CharField(help_text="Keep in a first-party cookie; pass to lead and sale"),
        "partner_code": serializers.CharField(),
        "cookie_window_days": serializers.IntegerField(),
    },
)
LEAD_OK = inline_serializer(
    "LeadResult",
    fields={
        "success": serializers.BooleanField(),
        "lead_id": serializers.IntegerField(),
        "click_id": serializers.CharField(),
        "provisional": serializers.BooleanField(required=False, help_text="Browser lead on a server_required program"),
    },
)
SALE_OK = inline_serializer(
    "SaleResult",
    fields={
        "success": serializers.BooleanField(),
        "sale_id": serializers.IntegerField(allow_null=True),
        "commission_id": serializers.IntegerField(
            allow_null=True,
            help_text=(
                "The commission the sale created. percent and fixed programs pay every sale except a renewal "
                "(is_recurring: true); recurring_percent and recurring_fixed pay every sale, renewals included, "
                "within duration_months of the customer's first commissioned sale (0 = lifetime). null when the "
                "sale is stored without one (message says why) or the attribution window expired."
            ),
        ),
        "message": serializers.CharField(
            required=False,
            help_text="Whether a commission was created, or why not (a renewal on a non-recurring program, or "
            "past the recurring period)",
        ),
        "attributed": serializers.BooleanField(required=False, help_text="false when the attribution window expired"),
        "reason": serializers.CharField(required=False),
        "click_age_days": serializers.FloatField(required=False),
        "window_days": serializers.IntegerField(required=False),
    },
)
REFUND_OK = inline_serializer(
    "RefundResult",
    fields={
        "success": serializers.BooleanField(),
        "status": serializers.ChoiceField(
            ["reversed", "refunded", "skipped", "no_commission"], required=False, help_text="Absent for a test key"
        ),
        "deductionAmount": serializers.IntegerField(required=False),
        "commission_id": serializers.IntegerField(required=False),
        "reason": serializers.CharField(required=False),
        "message": serializers.CharField(required=False),
        "test": serializers.BooleanField(required=False, help_text="Test key: nothing refunded"),
    },
)


def with_test_mode(name: str, result: Any) -> PolymorphicProxySerializer:
    """A live result, or (test key or test_mode body) the TestModeResult shape."""
    return PolymorphicProxySerializer(
        component_name=name, serializers=[result, TEST_MODE], resource_type_field_name=None
    )


# A paused link's 410: the typed error, with success false and the message beside it (as the route has always answered).
LINK_DISABLED = inline_serializer(
    "LinkDisabledError",
    fields={
        "error": type(TYPED_ERROR.fields["error"])(),  # the TypedErrorBody component
        "success": serializers.BooleanField(help_text="Always false"),
        "message": serializers.CharField(),
    },
)


class ClickTrackApi(ProgramKeyApi):
    program_key_mode = auth.IGNORED
    rate_scope = ratelimit.TRACK_CLICK
    failure_message = messages.CLICK_TRACKING_FAILED

    @extend_schema(
        summary="Record a click on a referral link",
        request=ClickInputSerializer,
        parameters=[FIRST_PARTY_COOKIE_HEADER],
        responses={
            200: OpenApiResponse(
                with_test_mode("ClickResponse", CLICK_OK), description="Recorded (test mode: TestModeResult)"
            ),
            403: OpenApiResponse(PLATFORM_ERROR, description="Test mode: program_id does not match the API key"),
            410: OpenApiResponse(LINK_DISABLED, description="link_disabled; no click recorded"),
            **COMMON_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        data = ClickInputSerializer(data=request.data).validated_input()
        context = ClickContext(
            key=self.program_key,
            request_ip=client_ip(request._request),
            request_user_agent=request.META.get("HTTP_USER_AGENT", ""),
            request_id=request_id_of(request._request),
            request_method=request.method or "",  # set on every request the server received
            request_meta=request.META,
        )
        result = click_record(data=data, context=context)
        self.log_program_id = (result.click_event if isinstance(result, ClickRecorded) else result.event).program_id
        if request.method == "HEAD":
            return Response(status=200)
        response = Response(click_body(result))
        first_party_click(request._request, response, result)
        return response

    @extend_schema(exclude=True)
    def head(self, request: Request) -> Response:
        """A link checker's or previewer's HEAD with a click's body: recorded as a prefetch (the bot rule), never
        counted or attributed; answered without a body."""
        return self.post(request)


class LeadTrackApi(ProgramKeyApi):
    program_key_mode = auth.OPTIONAL
    rate_scope = ratelimit.TRACK_LEAD
    failure_message = messages.LEAD_TRACKING_FAILED

    @extend_schema(
        summary="Record a lead (browser mode without a key, server mode with one)",
        request=LeadInputSerializer,
        responses={
            200: OpenApiResponse(
                with_test_mode("LeadResponse", LEAD_OK), description="Recorded (test mode: TestModeResult)"
            ),
            401: OpenApiResponse(
                PLATFORM_OR_TYPED_ERROR,
                description="Only for a key matching no program; a retired key gets api_key_rotation_required (typed)",
            ),
            403: OpenApiResponse(PLATFORM_ERROR, description="Test mode: program_id does not match the API key"),
            **COMMON_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        data = LeadInputSerializer(data=request.data).validated_input()
        result = lead_record(data=data, key=self.program_key, request_id=request_id_of(request._request))
        return Response(lead_body(result))


class SaleTrackApi(ProgramKeyApi):
    rate_scope = ratelimit.TRACK_MONEY
    failure_message = messages.SALE_TRACKING_FAILED
    default_error_codes = MONEY_ERROR_CODES

    @extend_schema(
        summary="Record a sale and its commission",
        request=SaleInputSerializer,
        responses={
            200: OpenApiResponse(
                with_test_mode("SaleResponse", SALE_OK),
                description="Attributed, not commissioned, window expired, or (test mode) TestModeResult",
            ),
            409: OpenApiResponse(
                PLATFORM_ERROR,
                description="duplicate_transaction; details.sale_id is the first sale; do not retry",
            ),
            422: OpenApiResponse(PLATFORM_ERROR, description="unsupported_currency; nothing created"),
            **MONEY_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        key = self.program_key
        assert key is not None  # the key is required: authentication refused the call without one
        test_mode = sale_is_test(data=body_object(request), key=key)
        data = SaleInputSerializer(data=request.data, test_mode=test_mode).validated_input()
        result = sale_record(data=data, key=key, request_id=request_id_of(request._request))
        return Response(sale_body(result))


class RefundTrackApi(ProgramKeyApi):
    rate_scope = ratelimit.TRACK_MONEY
    failure_message = messages.REFUND_TRACKING_FAILED
    default_error_codes = MONEY_ERROR_CODES
    empty_token_message = messages.INVALID_API_TOKEN

    @extend_schema(
        summary="Refund a sale (partly or whole) and claw back its commission",
        request=RefundInputSerializer,
        responses={
            200: OpenApiResponse(REFUND_OK),
            404: OpenApiResponse(PLATFORM_ERROR, description="Sale not found for transaction_id"),
            **MONEY_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        key = self.program_key
        assert key is not None  # the key is required: authentication refused the call without one
        additional_data = body_object(request).get("additional_data")
        # A test key (or a test-mode body) refunds nothing and is answered before the body is checked.
        in_test_mode = refund_test_mode(key=key, additional_data=additional_data)
        if in_test_mode is not None:
            return Response(refund_body(in_test_mode))
        data = RefundInputSerializer(data=request.data).validated_input()
        return Response(refund_body(refund_record(data=data, key=key, additional_data=additional_data)))
