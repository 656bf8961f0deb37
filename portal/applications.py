"""Partner applications (issue 26): a program's public page /join/<id> where anyone may apply to become a partner.
What is sent is recorded, and decided, by portal.services (application_submit, application_approve,
application_reject).

The page is open to anyone, so it gives nothing away and stores nothing it should not: the same thank-you page
whether the email is new, has applied already or is a partner's (no enumeration), and the same one for a bot that
filled the hidden field or sent the form faster than a person can (it is stored nowhere). Submissions are rate
limited per client address; refused input answers 400 and is not stored."""

import time
from typing import Any

from django import forms
from django.core import signing
from django.core.validators import URLValidator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from core.clientip import client_ip
from core.ids import MAX_BIGINT
from groups.models import PartnerGroup
from groups.terms import GroupTerms
from programs.models import Program

from .limits import post_limited
from .services import GROUP_LINE, application_submit, group_line_neutralized
from .terms import discount_words
from .views import program_terms

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
    group: PartnerGroup | None = None,
) -> HttpResponse:
    context: dict[str, Any] = {
        "program": program,
        "group": group,
        "action": f"/join/{program.pk}/{group.slug}" if group is not None else f"/join/{program.pk}",
        "terms": program_terms(program, _group_terms(group) if group is not None else None),
        "discount": discount_words(group) if group is not None else "",
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
    return _apply(request, _open_program(program_id))


def _apply(request: HttpRequest, program: Program, group: PartnerGroup | None = None) -> HttpResponse:
    """The application page of the program, or of one of its groups (with the group's questions)."""

    def blank() -> ApplicationForm:
        return ApplicationForm() if group is None else GroupApplicationForm(group=group)

    if request.method != "POST":
        return _form_page(request, program, blank(), group=group)
    form = ApplicationForm(request.POST) if group is None else GroupApplicationForm(request.POST, group=group)
    if _limited(request):
        return _form_page(request, program, form, error=TOO_MANY, status=429, group=group)
    # A bot's submission gets the same answer as a person's, and nothing is stored.
    if request.POST.get(HONEYPOT, ""):
        return _thanks(request, program)
    age = _stamp_age(program, request.POST.get("stamp", ""))
    if age is None or age < MIN_SECONDS:
        return _thanks(request, program)
    if age > MAX_FORM_AGE:
        form.is_valid()  # its errors are shown with the request to send it again
        return _form_page(request, program, form, error=FORM_EXPIRED, status=400, group=group)
    if not form.is_valid():
        return _form_page(request, program, form, stamp=request.POST["stamp"], status=400, group=group)
    data = form.cleaned_data
    answers: list[dict[str, str]] = []
    if isinstance(form, GroupApplicationForm) and group is not None:
        promotion, answers = form.answered_promotion(group), form.answers()
    else:
        promotion = group_line_neutralized(data["promotion"])
    application_submit(
        program=program,
        name=data["name"],
        email=data["email"],
        website=data["website"],
        promotion=promotion,
        request=request,
        group=group,
        answers=answers,
    )
    return _thanks(request, program)


# --- A group's own application page: /join/<program id>/<group slug> ---------------------------------------------

ANSWER_MAX_LENGTH = 1000
QUESTIONS_MAX = 20


def _group_terms(group: PartnerGroup) -> GroupTerms | None:
    """The group's reward terms; None for the default group (the program's own)."""
    if group.is_default:
        return None
    return GroupTerms(
        group_id=group.pk,
        group_name=group.name,
        commission_type=group.commission_type,
        rate=group.commission_rate,
        duration_months=group.duration_months,
        hold_days=group.hold_days,
    )


def _open_group(program_id: int, slug: str) -> PartnerGroup:
    """The program's group with this slug, when it takes applications; 404 otherwise (a closed group, an unknown
    slug and another program's group alike)."""
    group = (
        PartnerGroup.objects.filter(program_id=program_id, slug=slug, applications_open=True)
        .select_related("program")
        .first()
        if 0 < program_id <= MAX_BIGINT and len(slug) <= 100
        else None
    )
    if group is None:
        raise Http404("No such application page.")
    return group


def group_questions(group: PartnerGroup) -> list[tuple[str, bool]]:
    """The group's extra questions as (label, required); entries that are not {"label": text, ...} are skipped."""
    questions = group.application_questions if isinstance(group.application_questions, list) else []
    found = []
    for question in questions[:QUESTIONS_MAX]:
        if isinstance(question, dict) and isinstance(question.get("label"), str) and question["label"].strip():
            found.append((question["label"].strip()[:200], question.get("required") is True))
    return found


class GroupApplicationForm(ApplicationForm):
    """The program's application form with the group's questions after it (fields answer_1, answer_2, ...)."""

    def __init__(self, *args: Any, group: PartnerGroup, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.questions = group_questions(group)
        terms = self.fields.pop("terms")
        for number, (label, required) in enumerate(self.questions, start=1):
            self.fields[f"answer_{number}"] = forms.CharField(
                label=label,
                required=required,
                max_length=ANSWER_MAX_LENGTH,
                widget=forms.Textarea(attrs={"rows": 3, "style": "width:100%; box-sizing:border-box; font:inherit"}),
            )
        self.fields["terms"] = terms  # still last

    def answer_fields(self) -> list[forms.BoundField]:
        return [self[f"answer_{number}"] for number in range(1, len(self.questions) + 1)]

    def answers(self) -> list[dict[str, str]]:
        """The group's questions as asked, with the applicant's answers (PartnerApplication.answers)."""
        data = self.cleaned_data
        return [
            {"question": label, "answer": data.get(f"answer_{number}", "").strip()}
            for number, (label, _required) in enumerate(self.questions, start=1)
        ]

    def answered_promotion(self, group: PartnerGroup) -> str:
        """The promotion text as owners read it: the group's line first, then the applicant's words, then each
        question with its answer. The group and the answers are also kept as such (PartnerApplication.group,
        answers): approval reads the column, never the text."""
        data = self.cleaned_data
        lines = [GROUP_LINE.format(slug=group.slug, name=group.name), "", data["promotion"]]
        for number, (label, _required) in enumerate(self.questions, start=1):
            answer = data.get(f"answer_{number}", "").strip()
            lines += ["", f"{label}", answer or "(no answer)"]
        return "\n".join(lines)


@require_http_methods(["GET", "HEAD", "POST"])
def join_group(request: HttpRequest, program_id: int, group_slug: str) -> HttpResponse:
    group = _open_group(program_id, group_slug)
    return _apply(request, group.program, group)
