"""First-party mode (docs/first-party.md): the shop's reverse proxy forwards a path of the shop's own origin (`/_svc`)
to this service, stripping it, and says so with X-Forwarded-Prefix. On such a request a click or a visit answers with
the svc_click_id cookie set by the server: the browser keeps it for the program's window (Safari caps only cookies
written by script), and the page still reads it (window.svc.getClickId()), so it is never HttpOnly.

A client sending X-Forwarded-Prefix itself gains nothing: the cookie lands on the host it called, for it alone.
X-Forwarded-Host and X-Forwarded-Proto are read only behind trusted proxies (TRUSTED_PROXY_COUNT > 0), by their
right-most value (the one the proxy added), and only to decide the cookie's Domain, always one FIRST_PARTY_COOKIE_DOMAIN
names, and Secure attributes: no URL or redirect is ever built from them."""

import re

from django.conf import settings
from django.http import HttpRequest
from django.http.request import split_domain_port
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter

from tracking.models import PageVisit
from tracking.services.click import ClickRecorded
from tracking.services.common import TestEventRecorded
from tracking.services.first_party import first_party_seen_record, visit_cookie_window_days

COOKIE_NAME = "svc_click_id"
# The OpenAPI description of the cookie a first-party click or visit sets (only with X-Forwarded-Prefix).
FIRST_PARTY_COOKIE_HEADER = OpenApiParameter(
    "Set-Cookie",
    str,
    OpenApiParameter.HEADER,
    response=[200],
    description=(
        "First-party mode only (a call through the shop's proxy, with X-Forwarded-Prefix): "
        "svc_click_id=<click_id>; Max-Age=<the program's window in seconds>; Path=/; SameSite=Lax, plus Secure on "
        "https and Domain when FIRST_PARTY_COOKIE_DOMAIN covers the shop's host (docs/first-party.md)."
    ),
)
SECONDS_PER_DAY = 86400
# A value the cookie carries as it is (http.cookies quotes anything else, and the page would read the quotes): every
# click id the service makes; one a client chose (existing_click_id) may not be, and then the tracker writes it.
_COOKIE_SAFE = re.compile(r"[A-Za-z0-9!#$%&'*+\-.^_`|~:]{1,255}")


def is_first_party(request: HttpRequest) -> bool:
    """The call came through the shop's proxy: it carries a (non-empty) X-Forwarded-Prefix."""
    return bool(request.META.get("HTTP_X_FORWARDED_PREFIX", "").strip())


def _forwarded(request: HttpRequest, name: str) -> str:
    """The right-most value of a forwarded header, behind trusted proxies only: a proxy that appends (Apache's
    X-Forwarded-Host) writes after whatever the client sent, so only the last value is the proxy's, as with
    X-Forwarded-For (core.clientip). A balancer that appends its own host in turn costs the Domain, never more."""
    if settings.TRUSTED_PROXY_COUNT <= 0:
        return ""
    forwarded: str = request.META.get(name, "")
    return forwarded.rsplit(",", 1)[-1].strip()


def original_scheme(request: HttpRequest) -> str:
    """https or http: as the visitor's browser called (X-Forwarded-Proto), else as this server was called."""
    forwarded = _forwarded(request, "HTTP_X_FORWARDED_PROTO").lower()
    return forwarded if forwarded in ("http", "https") else request.scheme or "http"


def original_host(request: HttpRequest) -> str:
    """The host name the visitor's browser called (X-Forwarded-Host), else this request's Host; lower case, without
    the port; empty when it is no valid host name."""
    host = _forwarded(request, "HTTP_X_FORWARDED_HOST") or request.META.get("HTTP_HOST", "")
    return split_domain_port(host)[0]


def cookie_domain(host: str) -> str:
    """The FIRST_PARTY_COOKIE_DOMAIN entry (comma-separated) the host is, or is under; empty (a host-only cookie)
    when none is: a browser drops a cookie whose Domain does not cover the host it came from."""
    domains: str = settings.FIRST_PARTY_COOKIE_DOMAIN
    for entry in domains.split(","):
        domain = entry.strip().lstrip(".").lower()
        if domain and (host == domain or host.endswith("." + domain)):
            return domain
    return ""


def click_cookie_set(response: HttpResponseBase, request: HttpRequest, *, click_id: str, window_days: int) -> None:
    """Set-Cookie: svc_click_id=<click_id>; Max-Age=<window>; Path=/; SameSite=Lax (; Secure on https; Domain=…
    when FIRST_PARTY_COOKIE_DOMAIN covers the shop's host). No Expires: every browser that keeps cookies for weeks
    reads Max-Age, and the header stays the same whichever second it is sent. A click id a cookie cannot carry as it
    is sets nothing."""
    if not _COOKIE_SAFE.fullmatch(click_id):
        return
    response.cookies[COOKIE_NAME] = click_id
    cookie = response.cookies[COOKIE_NAME]
    cookie["max-age"] = window_days * SECONDS_PER_DAY
    cookie["path"] = "/"
    cookie["samesite"] = "Lax"
    if original_scheme(request) == "https":
        cookie["secure"] = True
    domain = cookie_domain(original_host(request))
    if domain:
        cookie["domain"] = domain


def first_party_click(
    request: HttpRequest, response: HttpResponseBase, result: ClickRecorded | TestEventRecorded
) -> None:
    """A recorded click answered through the shop's proxy: its cookie, for the window, when the click has a customer
    (a bot's or a prefetch's click has none: it attributes nothing, and must not replace or extend the visitor's
    cookie; a test click's id the tracker keeps by script), and the program's first-party call noted."""
    if not is_first_party(request):
        return
    if isinstance(result, ClickRecorded):
        if result.customer is not None:
            click_cookie_set(response, request, click_id=result.click_id, window_days=result.cookie_window_days)
        first_party_seen_record(program_id=result.click_event.program_id)
    else:
        first_party_seen_record(program_id=result.program_id)


def first_party_visit(request: HttpRequest, response: HttpResponseBase, visit: PageVisit) -> None:
    """A visit answered through the shop's proxy: the cookie again, for a whole window from now, when the visit's
    click id is a live customer's of its program (test visits refresh nothing), and the program's first-party call
    noted."""
    if not is_first_party(request):
        return
    if not visit.is_test and _COOKIE_SAFE.fullmatch(visit.click_id):
        window_days = visit_cookie_window_days(program_id=visit.program_id, click_id=visit.click_id)
        if window_days is not None:
            click_cookie_set(response, request, click_id=visit.click_id, window_days=window_days)
    first_party_seen_record(program_id=visit.program_id)
