"""The portal's own sign-in: a session under its own cookie, sent to /portal/ only. An owner's dashboard session
(Django's `sessionid`, a django.contrib.auth user) never opens the portal, and a partner's never opens the
dashboard: each side reads its own cookie only."""

from collections.abc import Callable
from functools import wraps
from importlib import import_module
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone

from programs.models import PartnerAccount

COOKIE = "svc_portal"
COOKIE_PATH = "/portal/"
SIGN_IN_URL = "/portal/sign-in"
_ACCOUNT, _EPOCH = "portal_account_id", "portal_epoch"


def _store(session_key: str | None = None) -> SessionBase:
    engine = import_module(settings.SESSION_ENGINE)
    store: SessionBase = engine.SessionStore(session_key)
    return store


def signed_in_account(request: HttpRequest) -> PartnerAccount | None:
    """The account this request's portal session is signed in as; None when signed out, the account is inactive,
    or the session was ended everywhere (its epoch is behind the account's)."""
    key = request.COOKIES.get(COOKIE, "")
    if not key or len(key) > 64:
        return None
    session = _store(key)
    account_id = session.get(_ACCOUNT)
    if not isinstance(account_id, int):
        return None
    account = PartnerAccount.objects.filter(pk=account_id, is_active=True).first()
    if account is None or session.get(_EPOCH) != account.session_epoch:
        return None
    return account


def sign_in(response: HttpResponse, account: PartnerAccount) -> None:
    """A new portal session for `account` (never a key the browser sent: no fixation), on `response`'s cookie."""
    session = _store()
    session[_ACCOUNT] = account.pk
    session[_EPOCH] = account.session_epoch
    session.set_expiry(settings.SESSION_COOKIE_AGE)
    session.save()
    assert session.session_key is not None  # saving a new session gives it its key
    account.last_login = timezone.now()
    account.save(update_fields=["last_login"])
    response.set_cookie(
        COOKIE,
        session.session_key,
        max_age=settings.SESSION_COOKIE_AGE,
        path=COOKIE_PATH,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def sign_out(request: HttpRequest, response: HttpResponse) -> None:
    """Ends this browser's portal session."""
    key = request.COOKIES.get(COOKIE, "")
    if key and len(key) <= 64:
        _store(key).delete()
    response.delete_cookie(COOKIE, path=COOKIE_PATH, samesite="Lax")


def sign_out_everywhere(account: PartnerAccount) -> None:
    """Ends every portal session of the account, in every browser."""
    account.session_epoch += 1
    account.save(update_fields=["session_epoch"])


def portal_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page for a signed-in partner: the view gets the account as `account`; a signed-out visitor goes to the
    sign-in page, and comes back here after."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        account = signed_in_account(request)
        if account is None:
            return HttpResponseRedirect(f"{SIGN_IN_URL}?{urlencode({'next': request.get_full_path()})}")
        return view(request, *args, account=account, **kwargs)

    return wrapper
