"""The dashboard pages that connect a program to its Stripe account. They live with the Stripe integration
because the connection page shows the last payment event the integration received."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.errors import ForbiddenError, NotFoundError
from core.urls import public_url
from programs.models import Action, Program
from programs.permissions import program_for_action
from programs.selectors import membership_get
from programs.stripe_connect import (
    StripeConnectError,
    stripe_connect_complete,
    stripe_connect_configured,
    stripe_connect_program_from_state,
    stripe_connect_url,
    stripe_disconnect,
)
from tracking.models import ProcessorEvent


class SignedInRequest(HttpRequest):
    """The request of a login_required page: its user is never anonymous."""

    user: User


def _program(request: HttpRequest, program_id: int) -> Program:
    """The program when the signed-in user may manage it; Django answers 404 or 403 otherwise."""
    try:
        return program_for_action(user=request.user, program_id=program_id, action=Action.PROGRAM_MANAGE)
    except NotFoundError:
        raise Http404("Program not found") from None
    except ForbiddenError:
        raise PermissionDenied("You cannot manage this program.") from None


@login_required
@require_GET
def stripe_connection(request: HttpRequest, program_id: int) -> HttpResponse:
    program = _program(request, program_id)
    last_event = ProcessorEvent.objects.filter(program=program).order_by("-received_at").first()
    membership = membership_get(user=request.user, program=program)
    return render(
        request,
        "programs/stripe_connection.html",
        {
            "program": program,
            # The header's role badge, as on the other program pages (only a role that manages gets here).
            "role": membership.role if membership else "",
            "last_event": last_event,
            "configured": stripe_connect_configured(),
        },
    )


@login_required
@require_POST
def stripe_connect_start(request: SignedInRequest, program_id: int) -> HttpResponse:
    program = _program(request, program_id)
    try:
        url = stripe_connect_url(
            program=program, user_id=request.user.pk, redirect_uri=public_url(request, reverse("stripe-oauth-callback"))
        )
    except StripeConnectError as exc:
        messages.error(request, str(exc))
        return redirect("stripe-connection", program_id=program.pk)
    return redirect(url)


@login_required
@require_GET
def stripe_oauth_callback(request: SignedInRequest) -> HttpResponse:
    state = request.GET.get("state", "")
    try:
        program = stripe_connect_program_from_state(state=state, user_id=request.user.pk)
    except StripeConnectError as exc:
        messages.error(request, str(exc))
        return redirect("/")
    _program(request, program.pk)
    if request.GET.get("error"):
        messages.error(
            request, f"Stripe connection cancelled: {request.GET.get('error_description') or request.GET['error']}"
        )
        return redirect("stripe-connection", program_id=program.pk)
    try:
        account_id = stripe_connect_complete(program=program, code=request.GET.get("code", ""))
    except StripeConnectError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Connected Stripe account {account_id}. Its payments now record sales here.")
    return redirect("stripe-connection", program_id=program.pk)


@login_required
@require_POST
def stripe_disconnect_view(request: HttpRequest, program_id: int) -> HttpResponse:
    program = _program(request, program_id)
    stripe_disconnect(program=program)
    messages.success(request, "Stripe disconnected. Its payment events are no longer recorded.")
    return redirect("stripe-connection", program_id=program.pk)
