from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from core import messages
from core.api import auth, ratelimit
from core.api.base import ProgramKeyApi
from core.clientip import client_ip
from tracking.services.click import ClickContext, click_record
from tracking.services.lead import lead_record
from tracking.services.refund import refund_record
from tracking.services.sale import sale_record

from .serializers import ClickInputSerializer, LeadInputSerializer, RefundInputSerializer, SaleInputSerializer

# Sale and refund errors always carry error.code.
MONEY_ERROR_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    409: "duplicate_transaction",
    422: "unsupported_currency",
    500: "internal_error",
}


def _body(request) -> dict[str, Any]:
    return request.data if isinstance(request.data, dict) else {}


def _validated(serializer) -> dict[str, Any]:
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ClickTrackApi(ProgramKeyApi):
    program_key_mode = auth.IGNORED
    rate_scope = ratelimit.TRACK_CLICK
    failure_message = messages.CLICK_TRACKING_FAILED

    @extend_schema(request=ClickInputSerializer, responses={200: OpenApiResponse(description="click_id, partner_code, cookie_window_days")})
    def post(self, request):
        data = _validated(ClickInputSerializer(data=request.data))
        context = ClickContext(
            key=self.program_key,
            request_ip=client_ip(request._request),
            request_user_agent=request.META.get("HTTP_USER_AGENT", ""),
            request_id=request._request.request_id,
        )
        return Response(click_record(data=data, context=context))


class LeadTrackApi(ProgramKeyApi):
    program_key_mode = auth.OPTIONAL
    rate_scope = ratelimit.TRACK_LEAD
    failure_message = messages.LEAD_TRACKING_FAILED

    @extend_schema(request=LeadInputSerializer, responses={200: OpenApiResponse(description="success, lead_id, click_id, provisional?")})
    def post(self, request):
        data = _validated(LeadInputSerializer(data=request.data))
        return Response(lead_record(data=data, key=self.program_key, request_id=request._request.request_id))


class SaleTrackApi(ProgramKeyApi):
    rate_scope = ratelimit.TRACK_MONEY
    failure_message = messages.SALE_TRACKING_FAILED
    default_error_codes = MONEY_ERROR_CODES

    @extend_schema(request=SaleInputSerializer, responses={200: OpenApiResponse(description="sale_id, commission_id, message")})
    def post(self, request):
        raw = _body(request)
        additional = raw.get("additional_data") if isinstance(raw.get("additional_data"), dict) else {}
        test_mode = self.program_key.is_test or additional.get("test_mode") is True or raw.get("livemode") is False
        data = _validated(SaleInputSerializer(data=request.data, test_mode=test_mode))
        return Response(sale_record(data=data, key=self.program_key, request_id=request._request.request_id))


class RefundTrackApi(ProgramKeyApi):
    rate_scope = ratelimit.TRACK_MONEY
    failure_message = messages.REFUND_TRACKING_FAILED
    default_error_codes = MONEY_ERROR_CODES
    empty_token_message = messages.INVALID_API_TOKEN

    @extend_schema(request=RefundInputSerializer, responses={200: OpenApiResponse(description="status, deductionAmount, commission_id")})
    def post(self, request):
        raw = _body(request)
        additional = raw.get("additional_data") if isinstance(raw.get("additional_data"), dict) else {}
        # A test key (or a test-mode body) refunds nothing and is answered before the body is checked.
        if self.program_key.is_test or additional.get("test_mode") is True:
            return Response({"success": True, "test": True})
        data = _validated(RefundInputSerializer(data=request.data))
        return Response(refund_record(data=data, key=self.program_key))
