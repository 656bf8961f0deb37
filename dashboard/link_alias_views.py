"""The Overview page's link parameters: owners and admins let the program's links carry the code in an old
platform's query parameter (?fpr=, ?ref=...) besides ?aff= and ?via= (programs.link_aliases)."""

from django import forms
from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from programs.link_aliases import link_aliases_from_text, link_aliases_problem
from programs.models import Action
from programs.services import SettingsChanges, program_settings_update

from .views import ProgramAccess
from .webhook_views import program_action

ALIASES_SAVED = "Links now also carry the code in {names}: aff wins, then via, then these in this order."
ALIASES_OFF = "Link aliases are off: links carry the code in ?aff= or ?via= only."
ALIASES_TEXT_MAX = 200


class LinkAliasesForm(forms.Form):
    link_aliases = forms.CharField(required=False, max_length=ALIASES_TEXT_MAX)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def link_aliases_settings(request: HttpRequest, access: ProgramAccess) -> HttpResponse:
    form = LinkAliasesForm(request.POST)
    back = redirect("dashboard-overview", program_id=access.program.pk)
    if not form.is_valid():
        flash.error(request, "; ".join(str(errors[0]) for errors in form.errors.values()))
        return back
    names = link_aliases_from_text(form.cleaned_data["link_aliases"])
    problem = link_aliases_problem(names)
    if problem:
        # Nothing is saved: the names in use stay.
        flash.error(request, problem)
        return back
    program_settings_update(program_id=access.program.pk, changes=SettingsChanges(link_aliases=names))
    if names:
        flash.success(request, ALIASES_SAVED.format(names=", ".join(f"?{name}=" for name in names)))
    else:
        flash.success(request, ALIASES_OFF)
    return back
