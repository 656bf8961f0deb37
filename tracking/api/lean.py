"""The click route's common call without DRF's per-request machinery.

Nearly every click is the same call: a POST of a JSON object, with no key, from a browser's tracker or a backend.
For it DRF would wrap the request, negotiate the renderer, pick the parser, run empty authentication, permission
and throttle steps and finalize the response: about a tenth of a new visitor's click in a worker. `track_click`
answers that call itself, through the same pieces: the same parser (parse_json_body), the same body validation
(ClickInputSerializer), the same rate limit, the same service, the same exception handler and envelopes, the same
JSON rendering, headers and request-log row.

It only answers what it knows it answers exactly as DRF would: everything else (another method, a key, another
content type or Accept header, a body it cannot read, any body the serializer refuses) is handed, untouched and
not yet counted, to ClickTrackApi, whose answers are the contract. tests/tracking/test_lean_click.py holds the
two side by side."""

import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from core.api import ratelimit
from core.api.handler import api_exception_handler
from core.api.parsers import parse_json_body
from core.clientip import client_ip
from core.errors import ApiError
from core.middleware import request_id_of
from programs.calllog import api_call_record, body_excerpt
from tracking.services.click import ClickContext, ClickInput, ClickRecorded, click_record

from .results import click_body
from .serializers import ClickInputSerializer
from .views import ClickTrackApi

drf_track_click = ClickTrackApi.as_view()

# What DRF's negotiation answers with JSON for, unchanged (a parameter such as `indent` changes the rendering).
_PLAIN_ACCEPT = frozenset(("", "*/*", "application/json"))
_PLAIN_CONTENT_TYPES = frozenset(
    ("application/json", "application/json; charset=utf-8", "application/json;charset=utf-8")
)
_RENDERER = JSONRenderer()
_ALLOW = ", ".join(ClickTrackApi().allowed_methods)


@csrf_exempt
def track_click(request: HttpRequest) -> HttpResponseBase:
    """POST /api/v1/track/click (name track-click)."""
    started = time.monotonic()
    data = _plain_click(request)
    if data is None:
        return drf_track_click(request)
    body, validated = data
    return _answered(request, body, validated, started=started)


# The URL's view stays ClickTrackApi for everything that inspects it: the OpenAPI schema (cls), the envelope and
# rate limit of a refusal made before any view runs (view_class, core.api.handler.error_response_for_route).
for _attribute in ("cls", "initkwargs", "view_class", "view_initkwargs"):
    setattr(track_click, _attribute, getattr(drf_track_click, _attribute))


def _plain_click(request: HttpRequest) -> tuple[dict[str, Any], ClickInput] | None:
    """The parsed body and its validated input when the call is the common one; None hands it to DRF."""
    meta = request.META
    if request.method != "POST" or "HTTP_AUTHORIZATION" in meta or request.GET:
        return None
    if meta.get("HTTP_ACCEPT", "").strip() not in _PLAIN_ACCEPT:
        return None
    if meta.get("CONTENT_TYPE", "").strip().lower() not in _PLAIN_CONTENT_TYPES:
        return None
    length = meta.get("CONTENT_LENGTH", "")
    # No length (a chunked body) or one over the limit: DRF's parser reads and refuses it.
    if not length.isdigit() or not 0 < int(length) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return None
    try:
        body = parse_json_body(request.body)
    except ApiError:
        return None
    if not isinstance(body, dict):
        return None
    try:
        return body, ClickInputSerializer(data=body).validated_input()
    except (ValidationError, ApiError):
        return None


def _answered(request: HttpRequest, body: dict[str, Any], data: ClickInput, *, started: float) -> HttpResponseBase:
    """BaseApi.initial's rate limit, ClickTrackApi.post, the exception handler and CallLoggedApi's log row."""
    usage = None
    program_id = None
    try:
        usage = ratelimit.rate_limit_check(ratelimit.TRACK_CLICK, request)
        result = click_record(
            data=data,
            context=ClickContext(
                key=None,
                request_ip=client_ip(request),
                request_user_agent=request.META.get("HTTP_USER_AGENT", ""),
                request_id=request_id_of(request),
                request_method="POST",
                request_meta=request.META,
            ),
        )
        program_id = (result.click_event if isinstance(result, ClickRecorded) else result.event).program_id
        response = Response(click_body(result))
    except Exception as exc:  # noqa: BLE001 - the API's one exception handler decides, as DRF's dispatch lets it
        view = ClickTrackApi()
        view.request = request  # type: ignore[assignment]  # the handler reads the path, for its log line
        response = api_exception_handler(exc, {"view": view})
    response.accepted_renderer = _RENDERER
    response.accepted_media_type = _RENDERER.media_type
    response.renderer_context = {}  # type: ignore[attr-defined]  # set by DRF before render()
    response.render()
    response["Allow"] = _ALLOW
    for name, value in (usage.headers() if usage is not None else {}).items():
        response.headers.setdefault(name, value)
    response["X-Request-ID"] = request_id_of(request)
    match = request.resolver_match
    api_call_record(
        program_id=program_id,
        method="POST",
        route=match.url_name if match and match.url_name else request.path,
        status=response.status_code,
        body=response.data,
        request_id=request_id_of(request),
        key=None,
        latency_ms=round((time.monotonic() - started) * 1000),
        excerpt=body_excerpt(body),
    )
    return response
