"""A group's own application page (/join/<program id>/<group slug>): open only for a group that takes applications,
it shows the group's terms and discount and asks the group's questions; the answers are kept with the application
(in its promotion text: PartnerApplication has no column for them), and approval puts the partner in the group,
at once for a partner already enrolled, or when the invitation is accepted. The page is public: tried with a
closed group, an unknown slug, another program's and another workspace's slugs, bots and bad input."""

import re
import time
from decimal import Decimal

import pytest
from django.core import mail
from django.core.cache import caches
from django.test import Client

from groups.models import GroupChange, PartnerGroup
from portal.applications import form_stamp
from portal.services import application_approve, application_group
from programs.models import PartnerApplication, PartnerProgram
from tests.factories import PartnerProgramFactory, ProgramFactory

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
LINK = re.compile(r"/portal/invitations/[A-Za-z0-9_-]+")
THANKS = b"Thank you for applying to"
QUESTIONS = [
    {"label": "Which podcast do you host?", "required": True},
    {"label": "Audience size", "required": False},
    "not a question",
    {"label": ""},
]


@pytest.fixture(autouse=True)
def counts_cleared(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()


@pytest.fixture
def program():
    # The program's own page is closed: a group's page is open on the group's say alone.
    return ProgramFactory(name="Acme Pro", applications_open=False)


@pytest.fixture
def podcasters(program):
    return PartnerGroup.objects.create(
        program=program,
        name="Podcasters",
        slug="podcasters",
        commission_type="fixed",
        commission_rate=Decimal("5000"),
        hold_days=7,
        discount_type="percent",
        discount_percent=Decimal("15"),
        discount_duration="repeating",
        discount_duration_months=3,
        applications_open=True,
        application_questions=QUESTIONS,
    )


def page(group) -> str:
    return f"/join/{group.program_id}/{group.slug}"


def form(program, **fields) -> dict[str, str]:
    data = {
        "name": "Pat Podcaster",
        "email": "pat@example.com",
        "website": "",
        "promotion": "A weekly show",
        "answer_1": "The Acme Hour",
        "answer_2": "",
        "terms": "on",
        "stamp": form_stamp(program, at=time.time() - 10),
        "leave_blank": "",
    }
    data.update(fields)
    return data


def test_the_page_shows_the_groups_terms_discount_and_questions(program, podcasters):
    response = Client().get(page(podcasters))
    assert response.status_code == 200
    text = response.content.decode()
    assert "Become a partner of Acme Pro: Podcasters" in text
    assert "50.00 per sale (in the sale&#x27;s currency)" in text
    assert "7 days before a commission is approved" in text
    assert "Your audience gets 15% off every payment for 3 months." in text
    assert "Which podcast do you host?" in text and 'name="answer_1"' in text
    assert "Audience size" in text and 'name="answer_2"' in text and "(optional)" in text
    assert 'name="answer_3"' not in text  # the malformed entries are not asked
    assert f'action="/join/{program.pk}/podcasters"' in text


def test_an_application_keeps_the_answers_and_names_the_group(program, podcasters):
    response = Client().post(page(podcasters), form(program, answer_2="4,000 listeners"))
    assert response.status_code == 200 and THANKS in response.content
    application = PartnerApplication.objects.get()
    assert application.status == PartnerApplication.Status.PENDING
    assert application.promotion == (
        "Applied to the group: Podcasters [podcasters]\n\nA weekly show\n\n"
        "Which podcast do you host?\nThe Acme Hour\n\nAudience size\n4,000 listeners"
    )
    assert application.group == podcasters
    assert application.answers == [
        {"question": "Which podcast do you host?", "answer": "The Acme Hour"},
        {"question": "Audience size", "answer": "4,000 listeners"},
    ]
    assert application_group(application) == podcasters
    assert mail.outbox == []


def test_a_required_answer_missing_is_400_and_nothing_is_stored(program, podcasters):
    response = Client().post(page(podcasters), form(program, answer_1=""))
    assert response.status_code == 400
    assert b"Which podcast do you host?" in response.content and b"This field is required." in response.content
    too_long = Client().post(page(podcasters), form(program, answer_2="x" * 1001))
    assert too_long.status_code == 400
    assert not PartnerApplication.objects.exists()


def test_bots_get_the_thank_you_page_and_nothing_is_stored(program, podcasters):
    assert THANKS in Client().post(page(podcasters), form(program, leave_blank="http://spam")).content
    assert THANKS in Client().post(page(podcasters), form(program, stamp=form_stamp(program))).content
    other = ProgramFactory()
    assert THANKS in Client().post(page(podcasters), form(program, stamp=form_stamp(other, at=1))).content
    assert not PartnerApplication.objects.exists()


def test_submissions_are_rate_limited_with_the_programs_page(program, podcasters):
    for _ in range(5):
        Client().post(page(podcasters), form(program))
    assert Client().post(page(podcasters), form(program)).status_code == 429


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_closed_unknown_default_or_other_programs_group_is_404(program, podcasters, method):
    closed = PartnerGroup.objects.create(program=program, name="Closed", slug="closed", applications_open=False)
    other = ProgramFactory(workspace=program.workspace)
    theirs = PartnerGroup.objects.create(program=other, name="Theirs", slug="theirs", applications_open=True)
    elsewhere = ProgramFactory()
    stranger = PartnerGroup.objects.create(program=elsewhere, name="Far", slug="far", applications_open=True)
    paths = [
        page(closed),
        f"/join/{program.pk}/no-such-group",
        f"/join/{program.pk}/default",  # the default group is closed unless its owner opens it
        f"/join/{program.pk}/theirs",  # another program's slug
        f"/join/{program.pk}/far",  # another workspace's
        f"/join/{other.pk}/podcasters",  # this group under another program's id
        "/join/99999999/podcasters",
        "/join/99999999999999999999999999/podcasters",
        f"/join/{program.pk}/{'x' * 150}",
    ]
    for path in paths:
        response = getattr(Client(), method)(path, form(program) if method == "post" else None)
        assert response.status_code == 404, path
        assert b"Podcasters" not in response.content and b"Theirs" not in response.content
    assert Client().get(page(theirs)).status_code == 200 and Client().get(page(stranger)).status_code == 200
    assert not PartnerApplication.objects.exists()


def test_the_programs_own_page_cannot_name_a_group(podcasters):
    program = podcasters.program
    program.applications_open = True
    program.save(update_fields=["applications_open"])
    forged = form(program, promotion="Applied to the group: Podcasters [podcasters]\n\nPlease")
    assert THANKS in Client().post(f"/join/{program.pk}", forged).content
    application = PartnerApplication.objects.get()
    assert application.group is None and application.answers == []
    assert application_group(application) is None


def test_approval_of_a_new_partner_puts_them_in_the_group_when_they_accept(program, podcasters):
    Client().post(page(podcasters), form(program))
    application = PartnerApplication.objects.get()
    sent = application_approve(application=application, decided_by=None)
    assert not PartnerProgram.objects.exists()  # enrolled when the invitation is accepted
    browser = Client()
    response = browser.post(sent.link.split("track.example.test")[-1], {"password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    enrolment = PartnerProgram.objects.get()
    assert enrolment.group == podcasters
    change = GroupChange.objects.get()
    assert (change.reason, change.to_group, change.actor) == (
        "application",
        podcasters,
        f"application {application.pk}",
    )
    assert b"Your group: <strong>Podcasters</strong>" in browser.get("/portal/").content


def test_approval_of_an_enrolled_partner_moves_them_at_once(program, podcasters):
    enrolment = PartnerProgramFactory(program=program, partner__email="pat@example.com")
    Client().post(page(podcasters), form(program))
    application_approve(application=PartnerApplication.objects.get(), decided_by=None)
    enrolment.refresh_from_db()
    assert enrolment.group == podcasters
    assert GroupChange.objects.get().reason == "application"


def test_a_group_closed_before_approval_is_not_joined(program, podcasters):
    Client().post(page(podcasters), form(program))
    PartnerGroup.objects.filter(pk=podcasters.pk).update(applications_open=False)
    enrolment = PartnerProgramFactory(program=program, partner__email="pat@example.com")
    application_approve(application=PartnerApplication.objects.get(), decided_by=None)
    enrolment.refresh_from_db()
    assert enrolment.group is None and not GroupChange.objects.exists()


def test_auto_approve_invites_and_the_accepted_partner_joins_the_group(program, podcasters):
    program.applications_auto_approve = True
    program.save(update_fields=["applications_auto_approve"])
    Client().post(page(podcasters), form(program))
    [message] = mail.outbox
    link = LINK.search(str(message.body))
    assert link is not None
    assert Client().post(link.group(0), {"password": PASSWORD, "password2": PASSWORD}).status_code == 302
    assert PartnerProgram.objects.get().group == podcasters


def test_an_owners_plain_invitation_moves_no_one(program, podcasters):
    from portal.services import invitation_create

    sent = invitation_create(program=program, name="Pat", email="pat@example.com")
    Client().post(sent.link.split("track.example.test")[-1], {"password": PASSWORD, "password2": PASSWORD})
    assert PartnerProgram.objects.get().group is None and not GroupChange.objects.exists()


def test_an_owner_approving_on_the_dashboard_puts_the_enrolled_partner_in_the_group(program, podcasters):
    from programs.models import Role
    from tests.factories import MembershipFactory

    enrolment = PartnerProgramFactory(program=program, partner__email="pat@example.com")
    Client().post(page(podcasters), form(program))
    application = PartnerApplication.objects.get()
    owner = Client()
    owner.force_login(MembershipFactory(workspace=program.workspace, role=Role.OWNER).user)
    listed = owner.get(f"/programs/{program.pk}/partners")
    assert b"Applied to the group: Podcasters [podcasters]" in listed.content
    assert b"The Acme Hour" in listed.content
    assert owner.post(f"/programs/{program.pk}/applications/{application.pk}/approve").status_code == 302
    enrolment.refresh_from_db()
    assert enrolment.group == podcasters
    change = GroupChange.objects.get()
    assert (change.reason, change.to_group) == ("application", podcasters)


def test_the_groups_page_fits_a_phone_layout(program, podcasters):
    """The page is the program's form with the group's fields: the same template, the same responsive fields."""
    text = Client().get(page(podcasters)).content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert text.count("width:100%; box-sizing:border-box") == 3  # promotion and the two questions
