"""Partner applications (issue 26): a program's public page /join/<id> where anyone may apply to become a partner,
and the decisions on what they send.

Approval is an invitation (portal.services.invitation_create): the workspace's partner with the applicant's email
is made or reused, and the one-time portal link is emailed, in words that say it answers the application. A
refusal sends no email: the address was typed by whoever filled the form, so it may be someone else's.

The page is open to anyone, so it gives nothing away and stores nothing it should not: the same thank-you page
whether the email is new, has applied already or is a partner's (no enumeration), and the same one for a bot that
filled the hidden field or sent the form faster than a person can (it is stored nowhere). Submissions are rate
limited per client address; refused input answers 400 and is not stored."""

import logging
import time
from smtplib import SMTPException
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core import signing
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.clientip import client_ip
from core.ids import MAX_BIGINT
from programs.models import PartnerApplication, Program

from .limits import post_limited
from .services import InvitationSent, account_email, invitation_create
from .views import program_terms

logger = logging.getLogger(__name__)

APPROVED_SUBJECT = "Your application to the {program} partner program is approved"
APPROVED_INTRO = "Thank you for applying to the {program} partner program: your application is approved, welcome!"

# Submissions per client address and hour, refused and accepted alike: the form cannot be used to send many
# applications, or invitations where a program approves them at once.
SUBMISSIONS_PER_HOUR = "5/h"
TOO_MANY = "You have sent this form many times in the last hour. Try again later."
# A person takes longer than this to fill the form; a bot posting at once gets the thank-you page, nothing stored.
MIN_SECONDS = 2.0
# A form shown longer ago than this is sent back to be sent again (with a new stamp).
MAX_FORM_AGE = 24 * 3600
FORM_EXPIRED = "This form was open for a long time. Check your answers and send it again."
STAMP_SALT = "portal.applications.join"
HONEYPOT = "leave_blank"


class ApplicationDecided(Exception):
    """The application was approved or rejected already: nothing was changed."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


def application_submit(
    *,
    program: Program,
    name: str,
    email: str,
    website: str,
    promotion: str,
    request: HttpRequest | None = None,
) -> None:
    """Records an application to `program` (the email lowercased). A second one of the same email while the first
    waits changes nothing. Where the program approves applications as they arrive, it is approved at once (the
    invitation's link is made for `request`'s host when PUBLIC_BASE_URL is not set)."""
    try:
        with transaction.atomic():
            application = PartnerApplication.objects.create(
                program=program, name=name, email=account_email(email), website=website, promotion=promotion
            )
    except IntegrityError:  # application_one_pending: this email's application is waiting already
        return
    if program.applications_auto_approve:
        # Outside the insert's transaction: were the email to fail, the application stays pending for an owner.
        try:
            application_approve(application=application, decided_by=None, request=request)
        except (SMTPException, OSError):
            logger.exception("application %s: the invitation email failed; it waits for a decision", application.pk)


def application_approve(
    *, application: PartnerApplication, decided_by: User | None, request: HttpRequest | None = None
) -> InvitationSent:
    """Approves a pending application: the applicant is invited to the program (partner made or reused, the portal
    link emailed). The row stays locked until the invitation is made and sent, so two approvals at once make one
    invitation. Raises ApplicationDecided when it was decided already; should the email fail, its error is raised
    and nothing is changed."""
    with transaction.atomic():
        locked = PartnerApplication.objects.select_for_update().select_related("program").get(pk=application.pk)
        if locked.status != PartnerApplication.Status.PENDING:
            raise ApplicationDecided(locked.status)
        program = locked.program
        sent = invitation_create(
            program=program,
            name=locked.name,
            email=locked.email,
            invited_by=decided_by,
            request=request,
            subject=APPROVED_SUBJECT.format(program=program.name),
            intro=APPROVED_INTRO.format(program=program.name),
        )
        _decide(locked, PartnerApplication.Status.APPROVED, decided_by, partner_id=sent.invitation.partner_id)
    application.refresh_from_db()
    return sent


def application_reject(*, application: PartnerApplication, decided_by: User | None) -> None:
    """Rejects a pending application, without an email (see the module's docstring); raises ApplicationDecided
    when it was decided already."""
    with transaction.atomic():
        locked = PartnerApplication.objects.select_for_update().get(pk=application.pk)
        if locked.status != PartnerApplication.Status.PENDING:
            raise ApplicationDecided(locked.status)
        _decide(locked, PartnerApplication.Status.REJECTED, decided_by)
    application.refresh_from_db()


def _decide(
    application: PartnerApplication, status: str, decided_by: User | None, partner_id: int | None = None
) -> None:
    application.status = status
    application.decided_by = decided_by if isinstance(decided_by, User) else None
    application.decided_at = timezone.now()
    fields = ["status", "decided_by", "decided_at"]
    if partner_id is not None:
        application.partner_id = partner_id
        fields.append("partner")
    application.save(update_fields=fields)


# The public page.


class ApplicationForm(forms.Form):
    name = forms.CharField(max_length=200, label="Name")
    email = forms.EmailField(max_length=254, label="Email")
    website = forms.URLField(
        max_length=500,
        required=False,
        assume_scheme="https",
        validators=[URLValidator(schemes=["http", "https"])],
        label="Website",
    )
    promotion = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 5, "style": "width:100%; box-sizing:border-box; font:inherit"}),
        label="How you will promote",
        help_text="Where and to whom: your site, newsletter, channels, audience. At most 2000 characters.",
    )
    terms = forms.BooleanField(
        label="I accept the program's terms",
        error_messages={"required": "Accept the program's terms to apply."},
    )


def form_stamp(program: Program, at: float | None = None) -> str:
    """The signed time the form was shown (for this program); `at` is for tests."""
    return signing.dumps({"p": program.pk, "t": time.time() if at is None else at}, salt=STAMP_SALT, compress=True)


def _stamp_age(program: Program, stamp: str) -> float | None:
    """Seconds since the form was shown, or None when the stamp is missing, forged, for another program or older
    than MAX_FORM_AGE (the age is then reported as MAX_FORM_AGE + 1)."""
    if not stamp or len(stamp) > 200:
        return None
    try:
        data = signing.loads(stamp, salt=STAMP_SALT, max_age=MAX_FORM_AGE)
    except signing.SignatureExpired:
        return MAX_FORM_AGE + 1.0
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("p") != program.pk or not isinstance(data.get("t"), (int, float)):
        return None
    return time.time() - float(data["t"])


def _limited(request: HttpRequest) -> bool:
    return post_limited(request, group="portal-join", key=client_ip(request), rate=SUBMISSIONS_PER_HOUR)


def _open_program(program_id: int) -> Program:
    """The program, when it takes applications; 404 otherwise, the same for a closed program and an unknown one."""
    program = (
        Program.objects.filter(pk=program_id, applications_open=True).first() if 0 < program_id <= MAX_BIGINT else None
    )
    if program is None:
        raise Http404("No such application page.")
    return program


def _form_page(
    request: HttpRequest,
    program: Program,
    form: ApplicationForm,
    *,
    stamp: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    context: dict[str, Any] = {
        "program": program,
        "terms": program_terms(program),
        "form": form,
        # Sent back as it came with a form to correct: the time counts from when the form was first shown.
        "stamp": stamp or form_stamp(program),
        "honeypot": HONEYPOT,
        "error": error,
    }
    return render(request, "portal/join.html", context, status=status)


def _thanks(request: HttpRequest, program: Program) -> HttpResponse:
    return render(request, "portal/join_thanks.html", {"program": program})


@require_http_methods(["GET", "HEAD", "POST"])
def join(request: HttpRequest, program_id: int) -> HttpResponse:
    program = _open_program(program_id)
    if request.method != "POST":
        return _form_page(request, program, ApplicationForm())
    form = ApplicationForm(request.POST)
    if _limited(request):
        return _form_page(request, program, form, error=TOO_MANY, status=429)
    # A bot's submission gets the same answer as a person's, and nothing is stored.
    if request.POST.get(HONEYPOT, ""):
        return _thanks(request, program)
    age = _stamp_age(program, request.POST.get("stamp", ""))
    if age is None or age < MIN_SECONDS:
        return _thanks(request, program)
    if age > MAX_FORM_AGE:
        form.is_valid()  # its errors are shown with the request to send it again
        return _form_page(request, program, form, error=FORM_EXPIRED, status=400)
    if not form.is_valid():
        return _form_page(request, program, form, stamp=request.POST["stamp"], status=400)
    data = form.cleaned_data
    application_submit(
        program=program,
        name=data["name"],
        email=data["email"],
        website=data["website"],
        promotion=data["promotion"],
        request=request,
    )
    return _thanks(request, program)
