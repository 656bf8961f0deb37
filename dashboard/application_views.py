"""The Partners page's Applications section: owners and admins approve or reject what people sent from the
program's public page (/join/<id>, portal.applications), and open or close it. Members see the list only."""

from smtplib import SMTPException

from django import forms
from django.contrib import messages as flash
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from core.ids import MAX_BIGINT
from portal.services import ApplicationDecided, application_approve, application_reject
from programs.models import Action, PartnerApplication
from programs.services import program_applications_set

from .views import ProgramAccess
from .webhook_views import program_action

APPROVED = "{name}'s application approved: an invitation to the partner portal was sent to {email}."
REJECTED = "{name}'s application rejected. No email was sent."
ALREADY_DECIDED = "{name}'s application was {status} already: nothing was changed."
NOT_SENT = "The invitation email to {email} could not be sent: nothing was changed. Try again later."
SETTINGS_CLOSED = "Applications are closed: the public page answers Not found."
SETTINGS_OPEN_AUTO = "Applications are open, and approved as they arrive."
SETTINGS_OPEN = "Applications are open: an owner or admin approves or rejects each."


class ApplicationSettingsForm(forms.Form):
    applications_open = forms.BooleanField(required=False)
    applications_auto_approve = forms.BooleanField(required=False)


def _back(access: ProgramAccess) -> HttpResponse:
    response = redirect("dashboard-partners", program_id=access.program.pk)
    response["Location"] += "#applications"
    return response


def _application(access: ProgramAccess, application_id: int) -> PartnerApplication:
    """The program's application; 404 for another program's (of this workspace or another) and unknown ids."""
    application = (
        PartnerApplication.objects.filter(pk=application_id, program=access.program).first()
        if 0 < application_id <= MAX_BIGINT
        else None
    )
    if application is None:
        raise Http404("Application not found")
    return application


def _user(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def application_approve_view(request: HttpRequest, access: ProgramAccess, application_id: int) -> HttpResponse:
    application = _application(access, application_id)
    try:
        application_approve(application=application, decided_by=_user(request), request=request)
    except ApplicationDecided as decided:
        flash.warning(request, ALREADY_DECIDED.format(name=application.name, status=decided.status))
    except (SMTPException, OSError):  # the mail server refused or could not be reached; the approval rolled back
        flash.error(request, NOT_SENT.format(email=application.email))
    else:
        flash.success(request, APPROVED.format(name=application.name, email=application.email))
    return _back(access)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def application_reject_view(request: HttpRequest, access: ProgramAccess, application_id: int) -> HttpResponse:
    application = _application(access, application_id)
    try:
        application_reject(application=application, decided_by=_user(request))
    except ApplicationDecided as decided:
        flash.warning(request, ALREADY_DECIDED.format(name=application.name, status=decided.status))
    else:
        flash.success(request, REJECTED.format(name=application.name))
    return _back(access)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def application_settings(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = ApplicationSettingsForm(request.POST)
    form.is_valid()  # two checkboxes: always valid, unchecked when absent
    program = program_applications_set(
        program_id=access.program.pk,
        applications_open=form.cleaned_data["applications_open"],
        applications_auto_approve=form.cleaned_data["applications_auto_approve"],
    )
    if not program.applications_open:
        flash.success(request, SETTINGS_CLOSED)
    else:
        flash.success(request, SETTINGS_OPEN_AUTO if program.applications_auto_approve else SETTINGS_OPEN)
    return _back(access)
