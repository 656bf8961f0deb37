"""The browser side of `svc login`: GET /cli/login?state=… asks the signed-in dashboard user to confirm the login
their terminal started (sign-in first through Django's /accounts/login/?next=…); POST completes it.

Completing is a server-side call of the same service the API's auth/callback runs: the page issues a short-lived
id_token for the signed-in user, bound to this login session, and hands it with the state to
login_session_complete. No token ever reaches the browser."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from core.errors import ApiError

from . import messages
from .models import CliLoginSession
from .selectors import login_session_get
from .services import login_session_complete, login_session_deny, user_code_for
from .tokens import id_token_issue

TEMPLATE = "cli_api/login_confirm.html"


def _refusal(session: CliLoginSession | None) -> tuple[int, str] | None:
    if session is None or session.authenticated_at or session.denied_at or session.consumed_at:
        return 404, messages.LOGIN_LINK_INVALID
    if session.is_expired():
        return 400, messages.LOGIN_LINK_EXPIRED
    return None


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def cli_login_confirm(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state", "")
    session = login_session_get(state) if state else None
    refusal = _refusal(session)
    if refusal is not None:
        status, message = refusal
        return render(request, TEMPLATE, {"mode": "error", "message": message}, status=status)
    assert session is not None
    context = {"state": state, "user_code": user_code_for(state)}
    if request.method == "GET":
        return render(request, TEMPLATE, {**context, "mode": "confirm"})
    if request.POST.get("action") == "deny":
        login_session_deny(session=session)
        return render(request, TEMPLATE, {**context, "mode": "denied"})
    assert request.user.is_authenticated  # login_required
    id_token = id_token_issue(user_id=request.user.pk, session_digest=session.state_digest)
    try:
        login_session_complete(state=state, id_token=id_token)
    except ApiError as error:
        return render(request, TEMPLATE, {"mode": "error", "message": error.message}, status=error.status)
    return render(request, TEMPLATE, {**context, "mode": "done"})
