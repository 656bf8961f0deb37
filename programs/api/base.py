"""The base view of every route authenticated with a program key (tracking, readiness, CLI program routes):

class SaleTrackApi(ProgramKeyApi):
    envelope = "platform"
    default_error_codes = SALE_ERROR_CODES
    failure_message = messages.SALE_TRACKING_FAILED
    rate_scope = ratelimit.TRACK_MONEY
"""

from typing import Any

from core import messages
from core.api.auth import DashboardSessionAuthentication
from core.api.base import BaseApi
from core.errors import ApiError, UnauthorizedError
from programs.api import auth
from programs.models import Program, ProgramKey
from programs.permissions import HasProgramAction


class ProgramKeyApi(BaseApi):
    """Routes authenticated with a program key (`Authorization: Bearer <key>`)."""

    authentication_classes = [auth.ProgramKeyAuthentication]
    program_key_mode: str = auth.REQUIRED
    empty_token_message: str = messages.MISSING_API_TOKEN

    def authentication_failed(self, message: str) -> ApiError:
        return UnauthorizedError(message)

    @property
    def program_key(self) -> ProgramKey | None:
        key = self.request.auth
        return key if isinstance(key, ProgramKey) else None

    @property
    def required_program_key(self) -> ProgramKey:
        """The key of a route whose program_key_mode is REQUIRED: authentication has already refused a call
        without one, so this only fails if a route reads it without requiring it."""
        key = self.program_key
        if key is None:
            raise self.authentication_failed(self.empty_token_message)
        return key

    def finalize_response(self, request, response, *args: Any, **kwargs: Any):
        response = super().finalize_response(request, response, *args, **kwargs)
        key = getattr(request, "_auth", None)
        if isinstance(key, ProgramKey) and key.rotation_flagged:
            for name, value in auth.rotation_headers(key, request).items():
                response[name] = value
            if isinstance(response.data, dict):
                response.data["warnings"] = [auth.rotation_warning(key, request)]
        return response


class ProgramMemberApi(BaseApi):
    """Routes for a signed-in program member (dashboard session only; a program key is never looked at).
    `HasProgramAction` resolves `self.program` from the path or the body and checks the role's action."""

    authentication_classes = [DashboardSessionAuthentication]
    permission_classes = [HasProgramAction]
    metadata_class = None  # no OPTIONS description: it would skip the program check
    blank_query_means_absent = True  # query parameters are read through serializers.present()
    program_id_from = "path"
    program_actions: dict[str, str] = {}
    program: Program

    def finalize_response(self, request, response, *args: Any, **kwargs: Any):
        response = super().finalize_response(request, response, *args, **kwargs)
        # Per-user data: never kept by a shared cache.
        response["Cache-Control"] = "private, no-store"
        return response
