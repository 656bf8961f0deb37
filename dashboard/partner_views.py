"""The Partners page's actions: inviting a partner to the program's portal (portal.services.invitation_create)."""

from django import forms
from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from portal.services import invitation_create
from programs.models import Action

from .views import ProgramAccess
from .webhook_views import program_action

INVITATION_SENT = "Invitation sent to {email}: the link works once, for 7 days."


class InviteForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    email = forms.EmailField(max_length=254)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_invite(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = InviteForm(request.POST)
    if not form.is_valid():
        flash.error(request, "; ".join(f"{field}: {errors[0]}" for field, errors in form.errors.items()))
    else:
        sent = invitation_create(
            program=access.program,
            name=form.cleaned_data["name"],
            email=form.cleaned_data["email"],
            invited_by=request.user,
            request=request,
        )
        flash.success(request, INVITATION_SENT.format(email=sent.invitation.email))
    return redirect("dashboard-partners", program_id=access.program.pk)
