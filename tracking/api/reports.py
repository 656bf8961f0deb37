"""The program-key report routes: the readiness verdict (/api/v1/programs/me/readiness) and the click sources
(/api/v1/programs/me/analytics/sources) of the key's program."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api import ratelimit
from core.api.envelopes import TYPED
from core.api.query import present
from core.api.schema import PLATFORM_ERROR, TYPED_ERROR
from core.errors import ApiError, UnauthorizedError
from core.urls import public_url
from programs.api.base import ProgramKeyApi
from tracking.insight.readiness import readiness_compute
from tracking.selectors.sources import click_sources_get

from .queries import DAY_RANGE, DayRangeQuerySerializer
from .schema import ClickSourcesResultSerializer, ReadinessVerdictSerializer

READINESS_RETRY_AFTER_SECONDS = 10


class ProgramReadinessGetApi(ProgramKeyApi):
    """The verdict for the key's program (a test key works too), with no `success` field. Errors use the
    typed envelope: 401 invalid_key (the three auth messages, ending with a period), 500 internal_error
    with retry_after_seconds."""

    envelope = TYPED
    rate_scope = ratelimit.READINESS
    failure_message = messages.READINESS_FAILED

    def authentication_failed(self, message: str) -> ApiError:
        return UnauthorizedError(f"{message}.", code="invalid_key")

    def shape_error(self, error: ApiError) -> ApiError:
        error = super().shape_error(error)
        if error.status >= 500:
            error.code = "internal_error"
            error.extra.setdefault("retry_after_seconds", READINESS_RETRY_AFTER_SECONDS)
        return error

    @extend_schema(
        summary="Readiness verdict of the key's program",
        responses={
            200: ReadinessVerdictSerializer,
            401: OpenApiResponse(TYPED_ERROR, description="invalid_key, or api_key_rotation_required"),
            429: OpenApiResponse(TYPED_ERROR, description="rate_limited"),
            500: OpenApiResponse(TYPED_ERROR, description="internal_error, retry_after_seconds 10"),
        },
    )
    def get(self, request: Request) -> Response:
        key = self.required_program_key
        base_url = public_url(request, "/").rstrip("/")
        verdict = readiness_compute(program=key.program, key=key, base_url=base_url)
        return Response(ReadinessVerdictSerializer(verdict).data)


class ProgramClickSourcesGetApi(ProgramKeyApi):
    """Top referrer domains and utm_source values of the key's program's live clicks (a test key reads its
    program's live clicks too: test clicks never count in reports)."""

    rate_scope = ratelimit.ANALYTICS_SOURCES
    blank_query_means_absent = True
    failure_message = messages.CLICK_SOURCES_FAILED

    @extend_schema(
        summary="Click sources: top referrer domains and utm_source values",
        parameters=DAY_RANGE,
        responses={
            200: ClickSourcesResultSerializer,
            400: OpenApiResponse(PLATFORM_ERROR, description="Bad dateFrom/dateTo"),
            401: OpenApiResponse(PLATFORM_ERROR, description="Missing or invalid key; retired key (typed envelope)"),
            429: OpenApiResponse(TYPED_ERROR, description="rate_limited"),
            500: OpenApiResponse(PLATFORM_ERROR, description="Server failure; the request id is in X-Request-ID"),
        },
    )
    def get(self, request: Request) -> Response:
        today = timezone.now().date()
        query = DayRangeQuerySerializer(data=present(request.query_params), context={"today": today})
        query.is_valid(raise_exception=True)
        sources = click_sources_get(program=self.required_program_key.program, **query.validated_data)
        return Response(ClickSourcesResultSerializer({"data": sources}).data)
