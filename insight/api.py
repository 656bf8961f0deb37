"""The program-key readiness route (/api/v1/programs/me/readiness): the verdict of the key's program."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api import ratelimit
from core.api.envelopes import TYPED
from core.api.schema import TYPED_ERROR
from core.errors import ApiError, UnauthorizedError
from core.urls import public_url
from programs.api.base import ProgramKeyApi
from tracking.api.schema import ReadinessVerdictSerializer

from .readiness import readiness_compute

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
