"""The Partners page's actions: inviting a partner to the program's portal (portal.services.invitation_create);
deactivating and reactivating a partner, their links and the owners' notes on them (programs.services).

A partner is named by an id in the path and found among the program's enrolments alone, a link among the program's
links alone: another program's or workspace's id answers 404 exactly like an id that names nothing."""

from django import forms
from django.contrib import messages as flash
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse

from core.ids import id_parse
from portal.services import invitation_create
from programs.models import Action, Partner, PartnerProgram, ReferralLink
from programs.services import (
    SHORT_LINK_PATTERN,
    PartnerInactive,
    PartnerNotEnrolled,
    ShortLinkTaken,
    partner_deactivate,
    partner_link_create,
    partner_notes_update,
    partner_reactivate,
    referral_link_activate,
    referral_link_deactivate,
)

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


NOTES_MAX = 5000
CODE_MAX = 100  # ReferralLink.short_link's length, as programs.services.SHORT_LINK_PATTERN allows

DEACTIVATED = (
    "{name} is deactivated in every program of this workspace. Links turned off: {links} (clicks on them answer "
    "410). Their commissions stay as they are."
)
ALREADY_INACTIVE = "{name} already was deactivated."
REACTIVATED = (
    "{name} is active again. Their links stay off: turn on the links you want (links turned off by the "
    "deactivation cannot be told from links turned off before it)."
)
ALREADY_ACTIVE = "{name} already was active."
PARTNER_INACTIVE = "{name} is deactivated: reactivate them first."
LINK_CREATED = "Link {code} made for {name}; it takes clicks at once."
CODE_INVALID = f"A code is 1 to {CODE_MAX} letters (A-Z, a-z), digits, hyphens (-) and underscores (_)."
CODE_TAKEN = "The code {code} is taken. Choose another."
LINK_ON = "Link {code} is on."
LINK_OFF = "Link {code} is off: clicks on it answer 410."
LINK_ALREADY_ON = "Link {code} already was on."
LINK_ALREADY_OFF = "Link {code} already was off."
NOTES_SAVED = "Notes on {name} saved."


class LinkForm(forms.Form):
    code = forms.CharField(max_length=CODE_MAX, required=False, strip=True)

    def clean_code(self) -> str:
        code: str = self.cleaned_data["code"]
        if code and not SHORT_LINK_PATTERN.fullmatch(code):
            raise forms.ValidationError(CODE_INVALID)
        return code


class NotesForm(forms.Form):
    notes = forms.CharField(max_length=NOTES_MAX, required=False, strip=False, widget=forms.Textarea)


def _enrolled_partner(access: ProgramAccess, partner_id: object) -> Partner:
    """The partner enrolled in the program (so of its workspace); 404 otherwise, a malformed id included."""
    wanted = id_parse(partner_id)
    enrolment = (
        PartnerProgram.objects.filter(program=access.program, partner_id=wanted).select_related("partner").first()
        if wanted is not None
        else None
    )
    if enrolment is None:
        raise Http404("Partner not found")
    return enrolment.partner


def _program_link(access: ProgramAccess, link_id: object) -> ReferralLink:
    wanted = id_parse(link_id)
    link = ReferralLink.objects.filter(program=access.program, pk=wanted).first() if wanted is not None else None
    if link is None:
        raise Http404("Link not found")
    return link


def _back(access: ProgramAccess, partner_id: int | None) -> HttpResponse:
    url = reverse("dashboard-partners", kwargs={"program_id": access.program.pk})
    return HttpResponseRedirect(f"{url}#partner-{partner_id}" if partner_id else url)


def _form_error(request: HttpRequest, form: forms.Form) -> None:
    flash.error(request, "; ".join(str(errors[0]) for errors in form.errors.values()))


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_deactivate_view(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    partner = _enrolled_partner(access, partner_id)
    turned_off = partner_deactivate(partner_id=partner.pk)
    if turned_off is None:
        flash.info(request, ALREADY_INACTIVE.format(name=partner.name))
    else:
        flash.success(request, DEACTIVATED.format(name=partner.name, links=turned_off))
    return _back(access, partner.pk)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_reactivate_view(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    partner = _enrolled_partner(access, partner_id)
    if partner_reactivate(partner_id=partner.pk):
        flash.success(request, REACTIVATED.format(name=partner.name))
    else:
        flash.info(request, ALREADY_ACTIVE.format(name=partner.name))
    return _back(access, partner.pk)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_link_create_view(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    partner = _enrolled_partner(access, partner_id)
    form = LinkForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
        return _back(access, partner.pk)
    code = form.cleaned_data["code"] or None  # none given: a generated code
    try:
        link = partner_link_create(program=access.program, partner_id=partner.pk, short_link=code)
    except PartnerInactive:
        flash.error(request, PARTNER_INACTIVE.format(name=partner.name))
    except ShortLinkTaken:  # anyone's code; the unique constraint decides
        flash.error(request, CODE_TAKEN.format(code=code))
    except PartnerNotEnrolled:  # the enrolment was removed meanwhile
        raise Http404("Partner not found") from None
    else:
        flash.success(request, LINK_CREATED.format(code=link.short_link, name=partner.name))
    return _back(access, partner.pk)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def link_deactivate_view(request: HttpRequest, access: ProgramAccess, link_id: int) -> HttpResponse:
    link = _program_link(access, link_id)
    changed = referral_link_deactivate(link_id=link.pk)
    flash.success(request, (LINK_OFF if changed else LINK_ALREADY_OFF).format(code=link.short_link))
    return _back(access, link.partner_id)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def link_activate_view(request: HttpRequest, access: ProgramAccess, link_id: int) -> HttpResponse:
    link = _program_link(access, link_id)
    try:
        changed = referral_link_activate(link_id=link.pk)
    except PartnerInactive:
        name = link.partner.name if link.partner is not None else ""
        flash.error(request, PARTNER_INACTIVE.format(name=name))
    else:
        flash.success(request, (LINK_ON if changed else LINK_ALREADY_ON).format(code=link.short_link))
    return _back(access, link.partner_id)


@program_action(Action.PROGRAM_MANAGE, ("POST",))
def partner_notes_view(request: HttpRequest, access: ProgramAccess, partner_id: int) -> HttpResponse:
    partner = _enrolled_partner(access, partner_id)
    form = NotesForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
    else:
        partner_notes_update(partner_id=partner.pk, notes=form.cleaned_data["notes"])
        flash.success(request, NOTES_SAVED.format(name=partner.name))
    return _back(access, partner.pk)
