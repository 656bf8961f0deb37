"""The partner's account: the account page (change the password, email preferences), a forgotten password's
reset by email, and the one-click unsubscribe of a commission email's link (no sign-in needed: the link's
signed token names the account and the kind).

A reset request never tells whether the email has an account, by its answer or by its time: the request counts its
limits and queues password_reset_email_task, once the answer is written, for every email; the task alone looks the
account up and sends the link."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.hashers import check_password
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import base36_to_int, int_to_base36
from django.views.decorators.http import require_http_methods, require_POST

from core.clientip import client_ip
from core.tasks import enqueue_after_response, service_task
from core.urls import public_url
from programs.models import PartnerAccount

from . import emails, services, session
from .limits import post_limited
from .models import EmailKind
from .session import portal_page
from .views import _password_problem

WRONG_PASSWORD = "That is not your current password."
RESET_SENT = "If that email has a partner account, a link is on its way. It works once, for an hour."
RESET_SUBJECT = "Reset your partner portal password"
RESET_BODY = """Someone asked to reset the password of the partner account {email}.

Choose a new password here (the link works once, for an hour):
{link}

If it was not you, ignore this email: your password stays as it is."""
RESET_SECONDS = 3600
RESET_LINK_PATH = "/portal/password-reset/"
# Reset requests: per client address, and per email asked about (a mailbox is never flooded).
RESETS_PER_CLIENT = "5/h"
RESETS_PER_EMAIL = "3/h"


class ResetTokens(PasswordResetTokenGenerator):
    """Django's password-reset tokens over a portal account: the hash covers the password hash, the session
    epoch and the last sign-in, so a token dies once used (the password changes and this browser signs in), when
    the password changes otherwise, or at "sign out everywhere"; and it is good for RESET_SECONDS only."""

    key_salt = "portal.account.ResetTokens"

    def _make_hash_value(self, user: PartnerAccount, timestamp: int) -> str:  # type: ignore[override]
        login = "" if user.last_login is None else user.last_login.replace(microsecond=0, tzinfo=None)
        return f"{user.pk}{user.password}{user.session_epoch}{login}{timestamp}"

    def check_token(self, user: PartnerAccount | None, token: str | None) -> bool:  # type: ignore[override]
        if not super().check_token(user, token):  # type: ignore[arg-type]
            return False
        assert token is not None
        issued = base36_to_int(token.split("-", 1)[0])
        return self._num_seconds(self._now()) - issued <= RESET_SECONDS


reset_tokens = ResetTokens()


def reset_link_token(account: PartnerAccount) -> str:
    """The link's token: the account's id and Django's token for it."""
    return f"{int_to_base36(account.pk)}-{reset_tokens.make_token(account)}"  # type: ignore[arg-type]


def reset_link_account(token: str) -> PartnerAccount | None:
    """The active account a reset link's token is good for now; None for an expired, used or forged one."""
    if not token or len(token) > 100:
        return None
    account_part, _, django_token = token.partition("-")
    try:
        account_id = base36_to_int(account_part)
    except ValueError:
        return None
    account = PartnerAccount.objects.filter(pk=account_id, is_active=True).first()
    if account is None or not account.password or not reset_tokens.check_token(account, django_token):
        return None
    return account


MAX_PASSWORD_LENGTH = 1024  # hashing a longer one is work an attacker could ask for, and no person types it


def _new_password_problem(password: str, again: str) -> str:
    if len(password) > MAX_PASSWORD_LENGTH or "\x00" in password:
        return f"Choose a password of at most {MAX_PASSWORD_LENGTH} characters, without control characters."
    return _password_problem(password, again)


def _preferences(account: PartnerAccount) -> list[tuple[str, str, bool]]:
    off = emails.unsubscribed_kinds(account)
    return [(kind.value, kind.label, kind.value not in off) for kind in EmailKind]


def _account_page(request: HttpRequest, account: PartnerAccount, status: int = 200, **extra: object) -> HttpResponse:
    context = {
        "account": account,
        "preferences": _preferences(account),
        "min_length": services.MIN_PASSWORD_LENGTH,
        **extra,
    }
    return render(request, "portal/account.html", context, status=status)


@require_http_methods(["GET", "HEAD"])
@portal_page
def account_page(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    return _account_page(request, account)


@require_POST
@portal_page
def password_change(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """The current password, and the new one twice: every other session ends, this browser signs in again."""
    if not check_password(request.POST.get("current", "")[: MAX_PASSWORD_LENGTH + 1], account.password):
        return _account_page(request, account, 400, password_error=WRONG_PASSWORD)
    error = _new_password_problem(request.POST.get("password", ""), request.POST.get("password2", ""))
    if error:
        return _account_page(request, account, 400, password_error=error)
    services.account_password_set(account, request.POST["password"])
    messages.success(request, "Your password is changed. You are signed out everywhere else.")
    response = HttpResponseRedirect("/portal/account")
    session.sign_in(response, account)
    return response


@require_POST
@portal_page
def email_preferences(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    """The account page's checkboxes: a kind ticked is sent, unticked is not."""
    wanted = set(request.POST.getlist("kind"))
    for kind in EmailKind:
        emails.preference_set(account, kind, unsubscribed=kind.value not in wanted)
    messages.success(request, "Your email preferences are saved.")
    return HttpResponseRedirect("/portal/account")


def _limited(request: HttpRequest, group: str, key: str, rate: str) -> bool:
    return post_limited(request, group=group, key=key, rate=rate)


@require_http_methods(["GET", "HEAD", "POST"])
def password_reset(request: HttpRequest) -> HttpResponse:
    """Asks for a reset link. The same answer whether or not the email has an account."""
    if request.method != "POST":
        return render(request, "portal/password_reset.html", {"email": ""})
    email = services.account_email(request.POST.get("email", "")[:254])
    if _limited(request, "portal-reset-client", client_ip(request), RESETS_PER_CLIENT):
        return render(
            request,
            "portal/password_reset.html",
            {"email": email, "error": "Too many requests. Try again in an hour."},
            status=429,
        )
    response = render(request, "portal/password_reset.html", {"email": email, "sent": RESET_SENT})
    # Past the limit for this email the answer stays the same and nothing is sent.
    if "\x00" not in email and not _limited(request, "portal-reset-email", email, RESETS_PER_EMAIL):
        link_base = public_url(request, RESET_LINK_PATH)
        enqueue_after_response(response, password_reset_email_task, email, link_base)
    return response


def password_reset_email_send(*, email: str, link_base: str) -> bool:
    """Emails the reset link (`link_base` and the token) to the active account with this email and a password;
    False when there is none. A send error is raised: the task's retries send it again."""
    account = services.account_get(email)
    if account is None or not account.is_active or not account.password:
        return False
    link = link_base + reset_link_token(account)
    send_mail(
        RESET_SUBJECT, RESET_BODY.format(email=account.email, link=link), settings.DEFAULT_FROM_EMAIL, [account.email]
    )
    return True


# Declared beside its sender: password_reset, above, queues it.
@service_task("portal.password_reset_email")
def password_reset_email_task(email: str, link_base: str) -> bool:
    return password_reset_email_send(email=email, link_base=link_base)


@require_http_methods(["GET", "HEAD", "POST"])
def password_reset_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The reset link: a new password, twice; then this browser is signed in."""
    account = reset_link_account(token)
    if account is None:
        return render(request, "portal/password_reset_gone.html", status=410)
    context = {"min_length": services.MIN_PASSWORD_LENGTH}
    if request.method != "POST":
        return render(request, "portal/password_reset_confirm.html", context)
    error = _new_password_problem(request.POST.get("password", ""), request.POST.get("password2", ""))
    if error:
        return render(request, "portal/password_reset_confirm.html", {**context, "error": error}, status=400)
    services.account_password_set(account, request.POST["password"])
    response = HttpResponseRedirect(session.COOKIE_PATH)
    session.sign_in(response, account)
    return response


@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """An email's unsubscribe link: GET asks to confirm (a mail scanner following links unsubscribes nobody),
    POST unsubscribes the account the token names from its kind."""
    found = emails.unsubscribe_token_read(token)
    if found is None:
        return render(request, "portal/unsubscribe_invalid.html", status=400)
    account, kind = found
    if request.method != "POST":
        return render(request, "portal/unsubscribe.html", {"kind": kind, "email": account.email})
    emails.preference_set(account, kind, unsubscribed=True)
    return render(request, "portal/unsubscribe_done.html", {"kind": kind, "email": account.email})
