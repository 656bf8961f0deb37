"""The click and sale routes' common calls without DRF's per-request machinery.

Nearly every click is the same call: a POST of a JSON object, with no key, from a browser's tracker or a backend;
nearly every sale a POST of a JSON object with the program's key. For them DRF would wrap the request, negotiate
the renderer, pick the parser, run the authentication, permission and throttle steps and finalize the response:
about a tenth of a worker's time per call. `track_click` and `track_sale` answer those calls themselves, through
the same pieces: the same parser (parse_json_body), key lookup and checks, body validation (the routes'
serializers), service, and the steps BaseApi and CallLoggedApi run through the same functions: rate limit,
exception handler and envelopes, JSON rendering and headers (core.api.base.plain_json_answer), request-log row
(programs.api.base.call_logged).
A sale's key and the customer its click_id names are read in one round trip (key_and_customer_get).

They only answer what they know they answer exactly as DRF would: everything else (another method, a missing,
unknown, retired or rotation-flagged key, a key on a click, another content type or Accept header, a body they
cannot read, any body the serializer refuses) is handed, untouched and not yet counted, to ClickTrackApi or
SaleTrackApi, whose answers are the contract. tests/tracking/test_lean_routes.py holds the two side by side.

One difference, by design: a sale over its rate limit with a valid key has had its key read before the 429
(DRF refuses before authentication). Nothing is written either way.

LeanRoutesMiddleware sends a POST to these and the other tracking routes past the middleware that serve signed-in
pages only (sessions, CSRF, the user, messages: the routes are CSRF-exempt and read none of them), through the rest
of the chain as configured. tests/tracking/test_lean_routes.py compares its answers, headers included, with the
full chain's."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import NoReverseMatch, ResolverMatch, resolve, reverse
from django.utils import timezone
from django.utils.module_loading import import_string
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from core.api.auth import bearer_token
from core.api.base import plain_json_answer
from core.api.parsers import parse_json_body
from core.clientip import client_ip
from core.errors import ApiError
from core.middleware import request_id_of
from programs.api.base import ProgramKeyApi, call_logged
from programs.models import ProgramKey
from tracking.services.click import ClickContext, ClickInput, ClickRecorded, click_record
from tracking.services.common import sale_is_test
from tracking.services.sale import PrefetchedCustomer, SaleInput, key_and_customer_get, sale_record

from .first_party import first_party_click
from .results import click_body, sale_body
from .serializers import ClickInputSerializer, SaleInputSerializer
from .views import ClickTrackApi, SaleTrackApi

drf_track_click = ClickTrackApi.as_view()
drf_track_sale = SaleTrackApi.as_view()

# What DRF's negotiation answers with JSON for, unchanged (a parameter such as `indent` changes the rendering).
_PLAIN_ACCEPT = frozenset(("", "*/*", "application/json"))
_PLAIN_CONTENT_TYPES = frozenset(
    ("application/json", "application/json; charset=utf-8", "application/json;charset=utf-8")
)
# What it answers, and the log row's program (None: the key's, or none).
Answer = tuple[Response, int | None]


@csrf_exempt
def track_click(request: HttpRequest) -> HttpResponseBase:
    """POST /api/v1/track/click (name track-click)."""
    started = time.monotonic()
    plain = _plain_click(request)
    if plain is None:
        return drf_track_click(request)
    body, data = plain

    def answer() -> Answer:
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
        first_party_click(request, response, result)
        return response, program_id

    return _answered(request, ClickTrackApi, answer, body=body, key=None, started=started)


@csrf_exempt
def track_sale(request: HttpRequest) -> HttpResponseBase:
    """POST /api/v1/track/sale (name track-sale)."""
    started = time.monotonic()
    plain = _plain_sale(request)
    if plain is None:
        return drf_track_sale(request)
    body, key, data, prefetched = plain

    def answer() -> Answer:
        result = sale_record(data=data, key=key, request_id=request_id_of(request), prefetched=prefetched)
        return Response(sale_body(result)), None

    return _answered(request, SaleTrackApi, answer, body=body, key=key, started=started)


# Each URL's view stays the DRF class for everything that inspects it: the OpenAPI schema (cls), the envelope and
# rate limit of a refusal made before any view runs (view_class, core.api.handler.error_response_for_route).
for _lean, _drf in ((track_click, drf_track_click), (track_sale, drf_track_sale)):
    for _attribute in ("cls", "initkwargs", "view_class", "view_initkwargs"):
        setattr(_lean, _attribute, getattr(_drf, _attribute))


def _plain_body(request: HttpRequest, *, with_key: bool) -> dict[str, Any] | None:
    """The parsed body of a plain call (POST, plain Accept and content type, a length within the limit, no query,
    an Authorization header exactly when `with_key`, a JSON object); None otherwise."""
    meta = request.META
    if request.method != "POST" or ("HTTP_AUTHORIZATION" in meta) is not with_key or request.GET:
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
    return body if isinstance(body, dict) else None


def _plain_click(request: HttpRequest) -> tuple[dict[str, Any], ClickInput] | None:
    """The parsed body and its validated input when the call is the common one; None hands it to DRF."""
    body = _plain_body(request, with_key=False)
    if body is None:
        return None
    try:
        return body, ClickInputSerializer(data=body).validated_input()
    except (ValidationError, ApiError):
        return None


def _plain_sale(
    request: HttpRequest,
) -> tuple[dict[str, Any], ProgramKey, SaleInput, PrefetchedCustomer | None] | None:
    """The body, the key (valid, not retired, not flagged for rotation: those answers carry DRF's headers), the
    validated input and the customer its click_id names, when the call is the common one; None hands it to DRF."""
    body = _plain_body(request, with_key=True)
    if body is None:
        return None
    token = bearer_token(request.META["HTTP_AUTHORIZATION"])
    if not token:
        return None
    raw_click_id = body.get("click_id")
    # The customer is read with the key only for the click_id the serializer keeps as it is (it strips spaces).
    click_id = raw_click_id if isinstance(raw_click_id, str) and raw_click_id == raw_click_id.strip() else ""
    key, prefetched = key_and_customer_get(token, click_id)
    if key is None or key.rotation_flagged or key.is_retired(timezone.now()):
        return None
    try:
        data = SaleInputSerializer(data=body, test_mode=sale_is_test(data=body, key=key)).validated_input()
    except (ValidationError, ApiError):
        return None
    return body, key, data, prefetched


def _answered(
    request: HttpRequest,
    view_class: type[ProgramKeyApi],
    answer: Callable[[], Answer],
    *,
    body: dict[str, Any],
    key: ProgramKey | None,
    started: float,
) -> HttpResponseBase:
    """The steps DRF's dispatch would run, through the same functions: core.api.base.plain_json_answer (rate
    limit, the route's post(), exception handler, rendering, headers), then the log row (call_logged). The
    program a row names is the key's, or the one `answer` found."""
    response, program_id = plain_json_answer(request, view_class, answer)
    program_id = key.program_id if key is not None else program_id
    call_logged(request, response, key=key, program_id=program_id, sent=body, note=None, started=started)
    return response


# What the tracking routes never use: each serves a signed-in browser (the routes are CSRF-exempt and read no
# session, user or message), and each costs every call some work all the same.
SIGNED_IN_MIDDLEWARE = frozenset(
    (
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    )
)
# Every POST route of the tracking API (the tracker config is a GET: it keeps the whole chain).
LEAN_ROUTE_NAMES = ("track-click", "track-lead", "track-sale", "track-refund", "track-visit")
Handler = Callable[[HttpRequest], HttpResponseBase]


@dataclass(frozen=True)
class _LeanRoute:
    match: ResolverMatch
    chain: Handler


class LeanRoutesMiddleware:
    """In MIDDLEWARE, before the signed-in middleware: a POST to a tracking route goes on through the
    middleware listed after this one except SIGNED_IN_MIDDLEWARE, to its view, as Django's handler would send it
    (each step wrapped in convert_exception_to_response, the middleware's process_exception on a view's
    exception). Every other request goes on through the whole chain.

    The chain is built here, not by a django.core.handlers.base.BaseHandler (tried: no faster): its
    load_middleware reads settings.MIDDLEWARE alone, so running it over the kept list means swapping a global
    setting while it builds; and it runs view hooks, where this chain refuses a middleware that has them (as
    test_lean_routes.py requires)."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        after = settings.MIDDLEWARE[settings.MIDDLEWARE.index(f"{__name__}.{type(self).__name__}") + 1 :]
        self._kept = [import_string(path) for path in after if path not in SIGNED_IN_MIDDLEWARE]
        self._routes: dict[str, _LeanRoute] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        route = self._route_table().get(request.path_info) if request.method == "POST" else None
        if route is None:
            return self.get_response(request)
        request.resolver_match = route.match
        return route.chain(request)

    def _route_table(self) -> dict[str, _LeanRoute]:
        # Built at the first request, not in __init__: the URLconf may import what imports this module.
        if self._routes is None:
            self._routes = {}
            for name in LEAN_ROUTE_NAMES:
                try:
                    path = reverse(name)
                except NoReverseMatch:
                    continue  # a URLconf without the route (a test's own)
                match = resolve(path)
                self._routes[path] = _LeanRoute(match=match, chain=self._chain(match))
        return self._routes

    def _chain(self, match: ResolverMatch) -> Handler:
        instances: list[Any] = []

        def view(request: HttpRequest) -> HttpResponseBase:
            try:
                response: HttpResponseBase = match.func(request, *match.args, **match.kwargs)
                # DRF's answers are rendered here, as Django's handler renders a response that can be.
                render = getattr(response, "render", None)
                return render() if callable(render) else response
            except Exception as exc:
                for middleware in reversed(instances):
                    handled = getattr(middleware, "process_exception", None)
                    answer: HttpResponseBase | None = handled(request, exc) if handled else None
                    if answer is not None:
                        return answer
                raise

        # Every step is synchronous here (the project serves WSGI): no awaitable comes back.
        handler = cast(Handler, convert_exception_to_response(view))
        for middleware_class in reversed(self._kept):
            middleware = middleware_class(handler)
            if hasattr(middleware, "process_view") or hasattr(middleware, "process_template_response"):
                # Django's handler would call these around the view; this chain does not.
                raise ImproperlyConfigured(f"{middleware_class.__name__} after LeanRoutesMiddleware has view hooks")
            instances.insert(0, middleware)
            handler = cast(Handler, convert_exception_to_response(middleware))
        return handler
