"""The base view of every route authenticated with a program key (tracking, readiness, CLI program routes):

class SaleTrackApi(ProgramKeyApi):
    envelope = "platform"
    default_error_codes = SALE_ERROR_CODES
    failure_message = messages.SALE_TRACKING_FAILED
    rate_scope = ratelimit.TRACK_MONEY
"""

from typing import Any

from core import messages
from core.api.base import BaseApi
from core.errors import ApiError, UnauthorizedError
from programs.api import auth
from programs.models import ProgramKey


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

    def finalize_response(self, request, response, *args: Any, **kwargs: Any):
        response = super().finalize_response(request, response, *args, **kwargs)
        key = getattr(request, "_auth", None)
        if isinstance(key, ProgramKey) and key.rotation_flagged:
            for name, value in auth.rotation_headers(key, request).items():
                response[name] = value
            if isinstance(response.data, dict):
                response.data["warnings"] = [auth.rotation_warning(key, request)]
        return response
