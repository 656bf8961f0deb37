"""The base view of every route authenticated with a program key (tracking, readiness, CLI program routes):

class SaleTrackApi(ProgramKeyApi):
    envelope = "platform"
    default_error_codes = SALE_ERROR_CODES
    failure_message = messages.SALE_TRACKING_FAILED
    rate_scope = ratelimit.TRACK_MONEY

Every call's request-log row is written by call_logged, the one place a row is made from a call: CallLoggedApi's
dispatch calls it for the DRF routes, and the click and sale routes' fast path (tracking/api/lean.py) for the calls
it answers without DRF, as it runs core.api.base's other steps.
"""

import time
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from core import messages
from core.api.auth import DashboardSessionAuthentication, bearer_token
from core.api.base import BaseApi
from core.errors import ApiError, UnauthorizedError
from programs.api import auth
from programs.calllog import api_call_record, body_excerpt
from programs.keys import key_digest
from programs.models import Program, ProgramKey, RetiredProgramKey
from programs.permissions import HasProgramAction
from programs.selectors import program_key_get_by_raw

REPLACED_KEY_SHOWN = "replaced key ending …{last4}"


@dataclass(frozen=True)
class RefusedKey:
    """A Bearer key that did not authenticate its call, as the call's log row names it."""

    program_id: int
    shown: str  # the key's mask, or REPLACED_KEY_SHOWN for a key that regeneration replaced
    mode: str
    note: dict[str, Any]


def refused_key_find(token: str) -> RefusedKey | None:
    """The program of a key that did not authenticate: a current key past its rotation deadline (refused, or
    ignored by the click route), or a key regeneration replaced (by its digest, programs.RetiredProgramKey). One or
    two indexed queries, only for calls whose key failed; None for a key no program ever had."""
    key = program_key_get_by_raw(token)
    if key is not None:
        return RefusedKey(key.program_id, key.masked, key.mode, {})
    retired = RetiredProgramKey.objects.filter(digest=key_digest(token)).values("program_id", "mode", "retired_at")
    found = next(iter(retired[:1]), None)
    if found is None:
        return None
    note = {"retired_key": True, "replaced_on": found["retired_at"].date().isoformat()}
    return RefusedKey(found["program_id"], REPLACED_KEY_SHOWN.format(last4=token[-4:]), found["mode"], note)


class CallLoggedApi(BaseApi):
    """Every call is written to the program's request log (programs.calllog) once answered. The program is the
    key's; a route that takes no key names it in `log_program_id` once it knows it. A call whose key did not
    authenticate it (past its deadline, replaced, or ignored by the click route) is logged under that key's program,
    so readiness's diagnosis finds a backend's refused calls as it finds the tracker's."""

    log_program_id: int | None = None
    log_note: dict[str, Any] | None = None  # added to the row's excerpt (e.g. a retired key, by auth)
    # False: answered reads (status < 400) are not logged (the CLI's log reads: a follower would fill the log it
    # reads, and push older rows out past REQUEST_LOG_MAX_ROWS).
    log_answered: bool = True

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        started = time.monotonic()
        response = super().dispatch(request, *args, **kwargs)
        drf_request = self.request
        key = getattr(drf_request, "_auth", None)
        key = key if isinstance(key, ProgramKey) else None
        try:
            sent = drf_request.data if request.method not in ("GET", "HEAD") else drf_request.query_params.dict()
        except (APIException, ApiError):
            # An unparsable body: answered with 400 when the view read it, or refused before that (a rate limit,
            # a bad key) with the body never read. Either way the log keeps no excerpt of it.
            sent = None
        if not self.log_answered and response.status_code < 400:
            return response
        call_logged(
            request,
            response,
            key=key,
            program_id=key.program_id if key else self.log_program_id,
            sent=sent,
            note=self.log_note,
            started=started,
        )
        return response


def call_logged(
    request: HttpRequest,
    response: HttpResponseBase,
    *,
    key: ProgramKey | None,
    program_id: int | None,
    sent: Any,
    note: dict[str, Any] | None,
    started: float,
) -> None:
    """Queues the call's request-log row (programs.calllog): its route, answer, key and latency since `started`
    (time.monotonic()), an excerpt of what it `sent` (the body, or the query of a read) with `note` added. A call
    whose Bearer key did not authenticate it is logged under that key's program (refused_key_find)."""
    refused = ("", "")
    note = note or {}
    # A rate-limited call was refused before its key was read, and is not worth a query more.
    token = bearer_token(request.META.get("HTTP_AUTHORIZATION", "")) if key is None else None
    token = token if response.status_code != 429 else None
    found = refused_key_find(token) if token else None
    if found is not None:
        program_id = program_id or found.program_id
        note, refused = {**note, **found.note}, (found.shown, found.mode)
    match = getattr(request, "resolver_match", None)
    api_call_record(
        program_id=program_id,
        method=request.method or "",  # set on every request the server received
        route=match.url_name if match and match.url_name else request.path,
        status=response.status_code,
        body=getattr(response, "data", None),
        request_id=getattr(request, "request_id", ""),
        key=key,
        latency_ms=round((time.monotonic() - started) * 1000),
        excerpt={**body_excerpt(sent), **note},
        refused_key=refused,
    )


class ProgramKeyApi(CallLoggedApi):
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

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
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

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        # Per-user data: never kept by a shared cache.
        response["Cache-Control"] = "private, no-store"
        return response
