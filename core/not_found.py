"""One answer for "nothing here", whatever DEBUG is. Django answers a path no route matches, and an Http404 a
page raises, with its debug page (every URL pattern listed) when DEBUG is on and a bare "Not Found" otherwise.
Here a path under /api/ gets the JSON envelope of the route (the platform one for a path no route matches) and
any other path the dashboard's own page, templates/404.html. Views that answer their own 404 (DRF's exception
handler, a page that explains what it did not find) keep their answer."""

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from . import errors, messages
from .api.handler import error_response_for_route

API_PREFIX = "/api/"


def not_found_response(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith(API_PREFIX):
        response: HttpResponse = error_response_for_route(request, errors.NotFoundError(messages.NOT_FOUND))
        response["X-Request-ID"] = getattr(request, "request_id", "")
        return response
    return render(request, "404.html", status=404)


class NotFoundMiddleware:
    """Last in MIDDLEWARE: the request has its user and messages, and CommonMiddleware (earlier) still turns a
    404 into its APPEND_SLASH redirect."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 404 and request.resolver_match is None:  # no route matched the path
            return not_found_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return not_found_response(request) if isinstance(exception, Http404) else None
