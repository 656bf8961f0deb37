"""The dashboard's webhooks pages: a program's endpoints (its own and its workspace's workspace-wide ones), made,
changed, rotated and deleted by roles with program:manage, and each endpoint's delivery log, read by any member
(tracking:list) and resent by roles with program:manage. Every write goes through webhooks.services.

An endpoint is looked up through the program in the path (webhooks.selectors.endpoint_get), so another
workspace's endpoint answers 404 like one that never existed, and the membership check is the program's. These
pages are signed-in session pages: no program key ever authenticates them.

A signing secret is shown once: the page that made it puts it in the session and redirects to the endpoint's
page, which takes it out of the session as it renders it (a reload no longer has it)."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods

from core.pagination import CappedPaginator
from programs.models import Action
from webhooks import selectors
from webhooks.models import DeliveryStatus, EventType, WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    EndpointWithSecret,
    WebhookRefused,
    deliveries_resend_failed,
    delivery_resend,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_update,
)

from . import messages
from .views import ProgramAccess, program_access
from .webhook_forms import SCOPE_WORKSPACE, EndpointCreateForm, EndpointEditForm

DELIVERIES_PER_PAGE = 25
# The session key holding a secret between the page that made it and the one render that shows it.
SHOWN_ONCE_KEY = "webhooks.secret_shown_once"
# datetime-local inputs: minutes, no zone (the dashboard's times are UTC).
PERIOD_FORMAT = "%Y-%m-%dT%H:%M"
# The resend form's default period: the last day.
DEFAULT_RESEND_HOURS = 24


def program_action(action: str, methods: tuple[str, ...]) -> Callable[..., Callable[..., HttpResponse]]:
    """Signs in, checks `action` on the program in the path, and hands the view a ProgramAccess (and the other
    path arguments). Unknown program: 404; no membership, or a role without the action: 403 page."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @require_http_methods(list(methods))
        @wraps(view)
        def wrapper(request: HttpRequest, program_id: int, **kwargs: Any) -> HttpResponse:
            access = program_access(request, program_id=program_id, action=action)
            return access if isinstance(access, HttpResponse) else view(request, access, **kwargs)

        return wrapper

    return decorate


def _endpoint(access: ProgramAccess, endpoint_id: int) -> WebhookEndpoint:
    endpoint = selectors.endpoint_get(
        program_id=access.program.pk, workspace_id=access.program.workspace_id, endpoint_id=endpoint_id
    )
    if endpoint is None:
        raise Http404("Webhook endpoint not found")
    return endpoint


def _detail(access: ProgramAccess, endpoint: WebhookEndpoint) -> HttpResponse:
    return redirect("dashboard-webhook", program_id=access.program.pk, endpoint_id=endpoint.pk)


def _show_secret_once(request: HttpRequest, made: EndpointWithSecret) -> None:
    request.session[SHOWN_ONCE_KEY] = {"endpoint_id": made.endpoint.pk, "secret": made.secret}


def _take_secret(request: HttpRequest, endpoint: WebhookEndpoint) -> str:
    """The secret to show on this render, if one was just made for this endpoint; gone from the session either
    way, so no later page (or another endpoint's) ever has it."""
    held = request.session.pop(SHOWN_ONCE_KEY, None)
    if isinstance(held, dict) and held.get("endpoint_id") == endpoint.pk:
        return str(held.get("secret", ""))
    return ""


def _masked(endpoint: WebhookEndpoint) -> str:
    return f"whsec_…{endpoint.secret_last4}"


def _types_label(event_types: list[str]) -> str:
    return "all event types" if "*" in event_types else ", ".join(event_types)


def _endpoint_row(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "workspace_wide": endpoint.program_id is None,
        "types": _types_label(endpoint.event_types),
        "masked_secret": _masked(endpoint),
        # Disabled by the service (410 or failing too long) says why; disabled by its owner has no reason.
        "disabled_by_service": not endpoint.enabled and bool(endpoint.disabled_reason),
    }


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def webhooks_list(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    endpoints = selectors.endpoints_list(program_id=access.program.pk, workspace_id=access.program.workspace_id)
    return render(
        request,
        "dashboard/program_webhooks.html",
        access.context(rows=[_endpoint_row(endpoint) for endpoint in endpoints]),
    )


def _refused_on_form(form: Any, error: WebhookRefused) -> None:
    form.add_error(None, str(error))


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def webhook_create(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = EndpointCreateForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                made = endpoint_create(
                    workspace_id=access.program.workspace_id,
                    program_id=None if data["scope"] == SCOPE_WORKSPACE else access.program.pk,
                    url=data["url"],
                    event_types=data["event_types"],
                    description=data["description"],
                    include_test_events=data["include_test_events"],
                )
            except WebhookRefused as error:
                _refused_on_form(form, error)
            else:
                _show_secret_once(request, made)
                flash.success(request, messages.ENDPOINT_CREATED)
                return _detail(access, made.endpoint)
        status = 400
    return render(request, "dashboard/webhook_form.html", access.context(form=form, endpoint=None), status=status)


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def webhook_edit(request: HttpRequest, access: ProgramAccess, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(access, endpoint_id)
    initial = {
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "include_test_events": endpoint.include_test_events,
        "description": endpoint.description,
        "enabled": endpoint.enabled,
    }
    form = EndpointEditForm(request.POST if request.method == "POST" else None, initial=initial)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                endpoint_update(endpoint_id=endpoint.pk, changes=form.cleaned_data)
            except WebhookRefused as error:
                _refused_on_form(form, error)
            else:
                flash.success(request, messages.ENDPOINT_UPDATED)
                return _detail(access, endpoint)
        status = 400
    return render(
        request,
        "dashboard/webhook_form.html",
        access.context(form=form, endpoint=endpoint, row=_endpoint_row(endpoint)),
        status=status,
    )


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def webhook_rotate(request: HttpRequest, access: ProgramAccess, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(access, endpoint_id)
    rotated = endpoint_rotate_secret(endpoint_id=endpoint.pk)
    _show_secret_once(request, rotated)
    until = rotated.endpoint.previous_secret_expires_at
    assert until is not None  # set by every rotation
    flash.success(
        request,
        messages.SECRET_ROTATED.format(
            until=until.strftime("%Y-%m-%d %H:%M"), hours=settings.WEBHOOK_ROTATION_OVERLAP_HOURS
        ),
    )
    return _detail(access, endpoint)


@program_action(Action.PROGRAM_MANAGE, ("GET", "HEAD", "POST"))
def webhook_delete(request: HttpRequest, access: ProgramAccess, endpoint_id: int) -> HttpResponse:
    """GET asks to confirm; the POST of that form deletes."""
    endpoint = _endpoint(access, endpoint_id)
    if request.method == "POST":
        endpoint_delete(endpoint_id=endpoint.pk)
        flash.success(request, messages.ENDPOINT_DELETED.format(url=endpoint.url))
        return redirect("dashboard-webhooks", program_id=access.program.pk)
    return render(
        request, "dashboard/webhook_delete.html", access.context(endpoint=endpoint, row=_endpoint_row(endpoint))
    )


def _filters(request: HttpRequest) -> dict[str, str]:
    """The log's filters from the query; an unknown value is no filter (the page shows every delivery)."""
    status = request.GET.get("status", "")
    event_type = request.GET.get("type", "")
    return {
        "status": status if status in DeliveryStatus.values else "",
        "type": event_type if event_type in EventType.values else "",
    }


def _minute(value: datetime) -> str:
    return value.astimezone(UTC).strftime(PERIOD_FORMAT)


@program_action(Action.TRACKING_LIST, ("GET", "HEAD"))
def webhook_detail(request: HttpRequest, access: ProgramAccess, endpoint_id: int) -> HttpResponse:
    """The endpoint and its delivery log, newest first, DELIVERIES_PER_PAGE a page, each delivery with its
    attempts (one query for the page's attempts)."""
    endpoint = _endpoint(access, endpoint_id)
    filters = _filters(request)
    deliveries = selectors.deliveries_list(
        endpoint_id=endpoint.pk, status=filters["status"], event_type=filters["type"]
    )
    paginator = CappedPaginator(deliveries, DELIVERIES_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    rows: list[WebhookDelivery] = list(page)
    attempts = selectors.attempts_by_delivery(delivery.pk for delivery in rows)
    now = timezone.now()
    given = {name: value for name, value in filters.items() if value}
    return render(
        request,
        "dashboard/webhook_detail.html",
        access.context(
            endpoint=endpoint,
            row=_endpoint_row(endpoint),
            secret=_take_secret(request, endpoint),
            previous_secret_until=endpoint.previous_secret_expires_at
            if endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at > now
            else None,
            page=page,
            deliveries=[{"delivery": delivery, "attempts": attempts[delivery.pk]} for delivery in rows],
            filters=filters,
            filtered=bool(given),
            query=urlencode(given),
            statuses=DeliveryStatus.choices,
            event_types=EventType.values,
            resend_since=_minute(now - timedelta(hours=DEFAULT_RESEND_HOURS)),
            resend_until=_minute(now + timedelta(minutes=1)),
            rotation_overlap_hours=settings.WEBHOOK_ROTATION_OVERLAP_HOURS,
        ),
    )


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def webhook_delivery_resend(
    request: HttpRequest, access: ProgramAccess, endpoint_id: int, delivery_id: int
) -> HttpResponse:
    endpoint = _endpoint(access, endpoint_id)
    delivery = selectors.delivery_get(endpoint_id=endpoint.pk, delivery_id=delivery_id)
    if delivery is None:
        raise Http404("Delivery not found")
    event_id = delivery.event.public_id
    try:
        resent = delivery_resend(delivery_id=delivery.pk)
    except WebhookRefused as error:
        flash.error(request, str(error))
    else:
        if resent:
            flash.success(request, messages.DELIVERY_RESENT.format(event_id=event_id))
        else:
            flash.info(request, messages.DELIVERY_ALREADY_PENDING.format(event_id=event_id))
    return _back_to_log(request, access, endpoint)


def _back_to_log(request: HttpRequest, access: ProgramAccess, endpoint: WebhookEndpoint) -> HttpResponse:
    """The log as the user left it: its filters and page come back in the form's `back` field."""
    back = request.POST.get("back", "")
    response = _detail(access, endpoint)
    if back.startswith("?") and len(back) > 1 and "\n" not in back and "\r" not in back:
        response["Location"] += back
    return response


def _period_parse(value: str) -> datetime | None:
    try:
        parsed = parse_datetime(value.strip())
    except ValueError:
        return None
    if parsed is None:
        return None
    return parsed.replace(tzinfo=UTC) if timezone.is_naive(parsed) else parsed


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def webhook_resend_failed(request: HttpRequest, access: ProgramAccess, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(access, endpoint_id)
    since = _period_parse(request.POST.get("since", ""))
    until = _period_parse(request.POST.get("until", ""))
    if since is None or until is None:
        flash.error(request, messages.PERIOD_UNREADABLE)
        return _back_to_log(request, access, endpoint)
    try:
        count = deliveries_resend_failed(endpoint_id=endpoint.pk, since=since, until=until)
    except WebhookRefused as error:
        flash.error(request, str(error))
    else:
        period = {"since": _minute(since).replace("T", " "), "until": _minute(until).replace("T", " ")}
        if count:
            flash.success(request, messages.FAILED_RESENT.format(count=count, **period))
        else:
            flash.info(request, messages.FAILED_NONE.format(**period))
    return _back_to_log(request, access, endpoint)
