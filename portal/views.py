"""The partner portal's pages (/portal/). Every page but sign-in and an invitation's needs a signed-in partner
(portal.session.portal_page) and shows only what belongs to that partner's account."""

from dataclasses import dataclass, replace
from decimal import Decimal

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from core.clientip import client_ip
from core.money import money
from core.sign_in_lock import PORTAL, sign_in_failed, sign_in_lock_seconds_left, sign_in_locked_message
from groups.terms import GroupTerms
from groups.terms import program_terms as default_terms
from programs.models import RECURRING_TYPES, CommissionType, LeadAuth, PartnerAccount, Program

from . import selectors, services, session
from .limits import post_limited
from .session import portal_page
from .terms import PartnerGroupView, partner_group_view

SIGN_IN_FAILED = "That email and password do not match a partner account."
PASSWORDS_DIFFER = "The two passwords differ."
# Sign-in and invitation attempts per client address and minute: guessing passwords stays slow.
ATTEMPTS_PER_MINUTE = "10/m"


@dataclass(frozen=True)
class ProgramTerms:
    program: Program
    commission: str
    recurring: str
    lead_mode: str
    hold_days: int
    # The partner's group in the program (the portal's home page only).
    group: PartnerGroupView | None = None


def program_terms(program: Program, terms: GroupTerms | None = None) -> ProgramTerms:
    """A program's terms in a partner's words: `terms` (a group's), or the program's own (its default group's)."""
    terms = terms or default_terms(program)
    rate = Decimal(terms.rate)
    if terms.commission_type in (CommissionType.PERCENT, CommissionType.RECURRING_PERCENT):
        commission = f"{rate.normalize():f}% of each sale"
    else:
        commission = f"{money(int(rate))} per sale (in the sale's currency)"
    if terms.commission_type not in RECURRING_TYPES:
        recurring = "first payment only: renewals pay nothing"
    elif terms.duration_months:
        recurring = f"renewals pay for {terms.duration_months} months"
    else:
        recurring = "renewals pay for the customer's lifetime"
    lead_mode = (
        "signups count at once"
        if program.lead_auth == LeadAuth.BROWSER_ALLOWED
        else "signups count once the program confirms them"
    )
    return ProgramTerms(
        program=program, commission=commission, recurring=recurring, lead_mode=lead_mode, hold_days=terms.hold_days
    )


@require_safe
@portal_page
def home(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    rows = []
    for enrolment in selectors.account_enrolments(account).select_related("group"):
        group = partner_group_view(enrolment)
        rows.append(replace(program_terms(enrolment.program, group.terms), group=group))
    return render(request, "portal/home.html", {"account": account, "enrolments": rows})


def _limited(request: HttpRequest) -> bool:
    return post_limited(request, group="portal-sign-in", key=client_ip(request), rate=ATTEMPTS_PER_MINUTE)


def _safe_next(request: HttpRequest, candidate: str) -> str:
    """Where to go after signing in: a portal page of this site, never elsewhere."""
    if candidate.startswith(session.COOKIE_PATH) and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return session.COOKIE_PATH


@require_http_methods(["GET", "HEAD", "POST"])
def sign_in(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request, request.POST.get("next") or request.GET.get("next", ""))
    context = {"next": next_url, "email": "", "error": ""}
    if request.method != "POST":
        return render(request, "portal/sign_in.html", context)
    email = request.POST.get("email", "")[:254]
    context["email"] = email
    if _limited(request):
        context["error"] = "Too many attempts. Wait a minute and try again."
        return render(request, "portal/sign_in.html", context, status=429)
    locked = sign_in_lock_seconds_left(PORTAL, email)
    if locked:
        context["error"] = sign_in_locked_message(locked)
        return render(request, "portal/sign_in.html", context, status=429)
    account = services.account_authenticate(email, request.POST.get("password", ""))
    if account is None:
        # The same answer whether or not the email has an account, and the same count towards its lock.
        sign_in_failed(request, PORTAL, email)
        context["error"] = SIGN_IN_FAILED
        return render(request, "portal/sign_in.html", context, status=400)
    response = HttpResponseRedirect(next_url)
    session.sign_in(response, account)
    return response


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    response = HttpResponseRedirect(session.SIGN_IN_URL)
    session.sign_out(request, response)
    return response


@require_POST
@portal_page
def sign_out_everywhere(request: HttpRequest, *, account: PartnerAccount) -> HttpResponse:
    session.sign_out_everywhere(account)
    response = HttpResponseRedirect(session.SIGN_IN_URL)
    session.sign_out(request, response)
    return response


def _gone(request: HttpRequest, headline: str, detail: str, status: int) -> HttpResponse:
    return render(request, "portal/invitation_gone.html", {"headline": headline, "detail": detail}, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation's link: set a password (or sign in with the account the email has) and join the program."""
    found = services.invitation_find(token)
    if found is None:
        return _gone(request, "Invitation not found", "This link is not an invitation. Check it was copied whole.", 404)
    if not services.invitation_usable(found):
        if found.accepted_at is not None:
            return _gone(request, "Invitation already used", "Sign in to see the program.", 410)
        return _gone(request, "Invitation expired", "Ask the program's owner to invite you again.", 410)
    existing = services.account_get(found.email)
    context = {"invitation": found, "has_account": existing is not None, "min_length": services.MIN_PASSWORD_LENGTH}
    if request.method != "POST":
        return render(request, "portal/invitation.html", context)
    if _limited(request):
        return render(request, "portal/invitation.html", {**context, "error": "Too many attempts."}, status=429)
    password = request.POST.get("password", "")
    if existing is not None:
        # The account's password is asked here as on the sign-in page: the same lock.
        locked = sign_in_lock_seconds_left(PORTAL, found.email)
        if locked:
            error = sign_in_locked_message(locked)
            return render(request, "portal/invitation.html", {**context, "error": error}, status=429)
        account = services.account_authenticate(found.email, password)
        if account is None:
            sign_in_failed(request, PORTAL, found.email)
            return render(request, "portal/invitation.html", {**context, "error": SIGN_IN_FAILED}, status=400)
    else:
        error = _password_problem(password, request.POST.get("password2", ""))
        if error:
            return render(request, "portal/invitation.html", {**context, "error": error}, status=400)
        try:
            account = services.account_create(found.email, password)
        except IntegrityError:  # made by a concurrent acceptance meanwhile: sign in with it instead
            return render(request, "portal/invitation.html", {**context, "has_account": True}, status=409)
    try:
        services.invitation_accept(found, account=account)
    except services.InvitationUnusable:
        return _gone(request, "Invitation already used", "Sign in to see the program.", 410)
    response = HttpResponseRedirect(session.COOKIE_PATH)
    session.sign_in(response, account)
    return response


def _password_problem(password: str, again: str) -> str:
    if password != again:
        return PASSWORDS_DIFFER
    if len(password) < services.MIN_PASSWORD_LENGTH:
        return f"Choose a password of at least {services.MIN_PASSWORD_LENGTH} characters."
    try:
        validate_password(password)
    except ValidationError as error:
        return " ".join(error.messages)
    return ""
