"""The program-key report routes: the click sources (/api/v1/programs/me/analytics/sources) of the key's program
(the readiness verdict, /api/v1/programs/me/readiness, is insight's: insight/api.py)."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api import ratelimit
from core.api.query import present
from core.api.schema import PLATFORM_ERROR, TYPED_ERROR
from programs.api.base import ProgramKeyApi
from tracking.selectors.sources import click_sources_get

from .queries import DAY_RANGE, DayRangeQuerySerializer
from .schema import ClickSourcesResultSerializer


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
