"""Program-key authentication for the tracking, readiness and CLI routes.

The view says how much it needs the key (program_key_mode) and how failures read
(authentication_failed); this class only parses and looks up."""

from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from django.utils.http import http_date
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from core import messages
from core.api.auth import bearer_token
from core.errors import TypedUnauthorizedError
from core.urls import public_url
from programs.keys import key_digest
from programs.models import ProgramKey, RetiredProgramKey
from programs.selectors import program_key_get_by_raw

if TYPE_CHECKING:
    from programs.api.base import CallLoggedApi

REQUIRED = "required"  # sale, refund, readiness, CLI program routes
OPTIONAL = "optional"  # lead: no key means browser mode, a wrong key is refused
IGNORED = "ignored"  # click: a key only unlocks visitor_ip and never refuses

ROTATION_DOCS_PATH = "/docs/errors#api_key_rotation_required"


def _deadline(key: ProgramKey) -> datetime:
    """The rotation deadline of a flagged key (these helpers are only called for one)."""
    if key.rotation_deadline is None:
        raise ValueError(f"program key {key.pk} is not flagged for rotation")
    return key.rotation_deadline


def rotation_headers(key: ProgramKey, request: Request) -> dict[str, str]:
    deadline = _deadline(key)
    marked_at = key.rotation_marked_at or deadline
    docs_url = public_url(request, ROTATION_DOCS_PATH)
    return {
        "Deprecation": f"@{int(marked_at.timestamp())}",
        "Sunset": http_date(deadline.timestamp()),
        "Link": f'<{docs_url}>; rel="deprecation"',
    }


def rotation_warning(key: ProgramKey, request: Request) -> dict[str, str]:
    deadline = _deadline(key)
    return {
        "code": "api_key_rotation_required",
        "message": messages.KEY_ROTATION_WARNING.format(deadline=deadline.isoformat()),
        "hint": messages.KEY_ROTATION_HINT,
        "rotate_by": deadline.isoformat(),
        "docs_url": public_url(request, ROTATION_DOCS_PATH),
    }


def rotation_required_error(key: ProgramKey, request: Request) -> TypedUnauthorizedError:
    return TypedUnauthorizedError(
        messages.KEY_ROTATION_REQUIRED.format(deadline=_deadline(key).isoformat()),
        code="api_key_rotation_required",
        headers=rotation_headers(key, request),
        hint=messages.KEY_ROTATION_HINT,
        docs_url=public_url(request, ROTATION_DOCS_PATH),
    )


def _retired_key_note(view: "CallLoggedApi", token: str) -> None:
    """A refused key that regeneration replaced: the request log row gets its program and a note of when (the
    answer stays the spec's). Only on this failure path, one indexed query by digest."""
    retired = next(iter(RetiredProgramKey.objects.filter(digest=key_digest(token))[:1]), None)
    if retired is not None:
        view.log_program_id = retired.program_id
        view.log_note = {"retired_key": True, "replaced_on": retired.retired_at.date().isoformat()}


class ProgramKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AnonymousUser, ProgramKey] | None:
        view = request.parser_context["view"]
        mode = getattr(view, "program_key_mode", REQUIRED)
        token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if token is None:
            if mode == REQUIRED:
                raise view.authentication_failed(messages.MISSING_AUTH_HEADER)
            return None
        if not token:
            if mode == REQUIRED:
                raise view.authentication_failed(view.empty_token_message)
            return None
        key = program_key_get_by_raw(token)
        if key is None:
            if mode == IGNORED:
                return None
            _retired_key_note(view, token)
            raise view.authentication_failed(messages.INVALID_API_TOKEN)
        if key.is_retired(timezone.now()):
            if mode == IGNORED:
                return None
            raise rotation_required_error(key, request)
        return (AnonymousUser(), key)

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
