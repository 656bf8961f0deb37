"""Partner applications (issue 26): the public page /join/<id> where anyone may apply, and the owner's decisions on
the dashboard's Partners page. The page is open to anyone, so it is tried as a spammer would: bots that fill the
hidden field or post at once, forged or missing form stamps, too many submissions, probing which emails are known,
bad input and missing CSRF tokens. Decisions are tried by every role, across programs and workspaces, twice, and
two at once."""

import re
import threading
import time
from smtplib import SMTPException
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core import mail, signing
from django.test import Client

from portal import applications, services
from portal.applications import form_stamp
from portal.services import ApplicationDecided, application_approve
from portal.session import COOKIE_PATH
from programs.models import Partner, PartnerApplication, PartnerInvitation, PartnerProgram, Role
from tests.factories import MembershipFactory, PartnerFactory, ProgramFactory, UserFactory
from tests.helpers import run_together, wait_for_lock_waiters

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
LINK = re.compile(r"/portal/invitations/[A-Za-z0-9_-]+")
THANKS = b"Thank you for applying to"


@pytest.fixture
def program():
    return ProgramFactory(name="Acme Pro", applications_open=True)


def page(program) -> str:
    return f"/join/{program.pk}"


def form(program, **fields) -> dict[str, str]:
    """A filled form, shown ten seconds ago (a person's pace)."""
    data = {
        "name": "Pat Applicant",
        "email": "Pat@Example.com",
        "website": "https://pat.example.org/blog",
        "promotion": "A newsletter of 4,000 readers\nand a review on my blog.",
        "terms": "on",
        "stamp": form_stamp(program, at=time.time() - 10),
        "leave_blank": "",
    }
    data.update(fields)
    return data


def apply(program, client: Client | None = None, **fields):
    return (client or Client()).post(page(program), form(program, **fields))


def signed_in(program, role=Role.OWNER) -> Client:
    client = Client()
    client.force_login(MembershipFactory.create(workspace=program.workspace, role=role).user)
    return client


def pending(program, **fields) -> PartnerApplication:
    values = {"name": "Pat", "email": "pat@example.com", "promotion": "My blog"} | fields
    return PartnerApplication.objects.create(program=program, **values)


class TestThePublicPage:
    def test_an_open_program_shows_the_form_with_its_terms(self, program):
        response = Client().get(page(program))
        assert response.status_code == 200
        text = response.content.decode()
        for shown in (
            "Become a partner of Acme Pro",
            "20% of each sale",
            'name="name"',
            'name="email"',
            'name="website"',
            'name="promotion"',
            'name="terms"',
            "I accept the program's terms",
            'name="stamp"',
            'name="leave_blank"',
            'name="csrfmiddlewaretoken"',
        ):
            assert shown in text
        # The honeypot is out of sight, out of the tab order and out of screen readers.
        assert re.search(r'<div class="visually-hidden" aria-hidden="true">\s*<label for="leave_blank">', text)
        assert 'tabindex="-1"' in text

    def test_a_closed_program_and_an_unknown_one_answer_the_same_404(self, program):
        closed = ProgramFactory(applications_open=False)
        answers = [
            Client().get(page(closed)),
            Client().get("/join/999999"),
            Client().get("/join/99999999999999999999999999"),
            Client().post(page(closed), form(closed)),
        ]
        assert [response.status_code for response in answers] == [404, 404, 404, 404]
        # The page names the address asked for, and nothing else differs.
        paths = [page(closed), "/join/999999", "/join/99999999999999999999999999", page(closed)]
        pages = {response.content.decode().replace(path, "PATH") for response, path in zip(answers, paths, strict=True)}
        assert len(pages) == 1
        assert not PartnerApplication.objects.exists()

    def test_a_submission_stores_one_pending_application_and_sends_nothing(self, program):
        response = apply(program)
        assert response.status_code == 200 and THANKS in response.content
        application = PartnerApplication.objects.get()
        assert (application.program, application.name, application.email, application.website) == (
            program,
            "Pat Applicant",
            "pat@example.com",
            "https://pat.example.org/blog",
        )
        assert application.promotion == "A newsletter of 4,000 readers\nand a review on my blog."
        assert application.status == PartnerApplication.Status.PENDING and application.decided_at is None
        assert mail.outbox == [] and not Partner.objects.exists()

    def test_the_website_is_optional(self, program):
        assert apply(program, website="").status_code == 200
        assert PartnerApplication.objects.get().website == ""

    def test_a_second_application_while_the_first_waits_changes_nothing(self, program):
        first = apply(program)
        again = apply(program, email="PAT@example.COM", name="Someone Else", promotion="Other words")
        assert again.status_code == 200 and again.content == first.content
        application = PartnerApplication.objects.get()
        assert (application.name, application.promotion.startswith("A newsletter")) == ("Pat Applicant", True)

    def test_after_a_rejection_the_same_email_may_apply_again(self, program):
        apply(program)
        PartnerApplication.objects.update(status=PartnerApplication.Status.REJECTED)
        apply(program)
        assert PartnerApplication.objects.filter(status=PartnerApplication.Status.PENDING).count() == 1
        assert PartnerApplication.objects.count() == 2

    def test_auto_approve_invites_the_applicant_at_once(self, program):
        program.applications_auto_approve = True
        program.save()
        response = apply(program)
        assert response.status_code == 200 and THANKS in response.content
        application = PartnerApplication.objects.get()
        assert application.status == PartnerApplication.Status.APPROVED
        assert application.decided_by is None and application.decided_at is not None
        [message] = mail.outbox
        assert message.to == ["pat@example.com"]
        assert message.subject == "Your application to the Acme Pro partner program is approved"
        assert "Thank you for applying to the Acme Pro partner program" in message.body
        partner = Partner.objects.get()
        assert (partner.workspace_id, partner.name, partner.email) == (
            program.workspace_id,
            "Pat Applicant",
            "pat@example.com",
        )
        assert application.partner == partner
        # The link joins the program like an owner's invitation.
        found = LINK.search(str(message.body))
        assert found is not None
        joined = Client().post(found.group(0), {"password": PASSWORD, "password2": PASSWORD})
        assert joined.status_code == 302 and joined["Location"] == COOKIE_PATH
        assert PartnerProgram.objects.filter(partner=partner, program=program).exists()

    def test_when_the_auto_approval_email_fails_the_application_waits_for_an_owner(self, program):
        program.applications_auto_approve = True
        program.save()
        with mock.patch("portal.services.send_mail", side_effect=SMTPException("mail server down")):
            response = apply(program)
        assert response.status_code == 200 and THANKS in response.content
        application = PartnerApplication.objects.get()
        assert application.status == PartnerApplication.Status.PENDING and application.partner is None
        assert not PartnerInvitation.objects.exists() and not Partner.objects.exists()

    def test_the_answer_is_the_same_for_a_new_email_a_known_one_and_a_partners(self, program):
        new = apply(program, email="new@example.com")
        known = apply(program, email="new@example.com")
        PartnerFactory(workspace=program.workspace, email="partner@example.com")
        partner = apply(program, email="partner@example.com")
        assert new.status_code == known.status_code == partner.status_code == 200
        assert new.content == known.content == partner.content
        assert mail.outbox == []

    def test_the_answer_is_the_same_for_a_known_email_with_auto_approve(self, program):
        program.applications_auto_approve = True
        program.save()
        new = apply(program, email="new@example.com")
        PartnerFactory(workspace=program.workspace, email="partner@example.com")
        partner = apply(program, email="partner@example.com")
        assert new.content == partner.content
        # The workspace's partner is reused, not copied.
        assert Partner.objects.filter(email="partner@example.com").count() == 1
        assert PartnerApplication.objects.get(email="partner@example.com").partner.email == "partner@example.com"


class TestSpam:
    def success(self, program) -> bytes:
        content = apply(program, email="real@example.com").content
        PartnerApplication.objects.all().delete()
        return content

    def test_a_filled_honeypot_gets_the_thank_you_page_and_nothing_is_stored(self, program):
        expected = self.success(program)
        response = apply(program, leave_blank="http://spam.example")
        assert response.status_code == 200 and response.content == expected
        assert not PartnerApplication.objects.exists() and mail.outbox == []

    def test_a_honeypot_with_invalid_input_still_gets_the_thank_you_page(self, program):
        response = apply(program, leave_blank="x", email="not an email")
        assert response.status_code == 200 and THANKS in response.content
        assert not PartnerApplication.objects.exists()

    def test_a_form_sent_too_fast_gets_the_thank_you_page_and_nothing_is_stored(self, program):
        expected = self.success(program)
        at_once = apply(program, stamp=form_stamp(program))
        just_under = apply(program, stamp=form_stamp(program, at=time.time() - 1.5))
        assert at_once.status_code == just_under.status_code == 200
        assert at_once.content == just_under.content == expected
        assert not PartnerApplication.objects.exists()

    def test_the_stamp_the_page_shows_is_too_fresh_to_post_at_once(self, program):
        client = Client()
        shown = client.get(page(program)).content.decode()
        stamp = re.search(r'name="stamp" value="([^"]+)"', shown)
        assert stamp is not None
        assert client.post(page(program), form(program, stamp=stamp.group(1))).status_code == 200
        assert not PartnerApplication.objects.exists()
        with mock.patch.object(applications.time, "time", return_value=time.time() + 3):
            assert client.post(page(program), form(program, stamp=stamp.group(1))).status_code == 200
        assert PartnerApplication.objects.count() == 1

    @pytest.mark.parametrize(
        "stamp",
        [
            None,
            "",
            "garbage",
            "x" * 5000,
            "forged",
            "other salt",
            "other program",
            "no time",
        ],
    )
    def test_a_missing_or_forged_stamp_gets_the_thank_you_page_and_nothing_is_stored(self, program, stamp):
        expected = self.success(program)
        old = time.time() - 10
        made = {
            "forged": form_stamp(program, at=old)[:-3] + "abc",
            "other salt": signing.dumps({"p": program.pk, "t": old}, salt="another", compress=True),
            "other program": form_stamp(ProgramFactory(applications_open=True), at=old),
            "no time": signing.dumps({"p": program.pk}, salt=applications.STAMP_SALT),
        }.get(stamp, stamp)
        data = form(program)
        if made is None:
            del data["stamp"]
        else:
            data["stamp"] = made
        response = Client().post(page(program), data)
        assert response.status_code == 200 and response.content == expected
        assert not PartnerApplication.objects.exists()

    def test_a_form_open_for_more_than_a_day_is_sent_back_to_send_again(self, program):
        with mock.patch.object(signing.time, "time", return_value=time.time() - 2 * 86400):
            stale = form_stamp(program, at=time.time() - 2 * 86400)
        response = apply(program, stamp=stale)
        assert response.status_code == 400 and applications.FORM_EXPIRED.encode() in response.content
        assert not PartnerApplication.objects.exists()

    def test_six_submissions_an_hour_from_one_address_answer_429(self, program):
        for n in range(5):
            assert apply(program, email=f"p{n}@example.com").status_code == 200
        refused = apply(program, email="p5@example.com")
        assert refused.status_code == 429 and applications.TOO_MANY.encode() in refused.content
        assert PartnerApplication.objects.count() == 5
        # Another address has its own count.
        assert apply(program, Client(REMOTE_ADDR="10.1.2.3"), email="other@example.com").status_code == 200
        assert PartnerApplication.objects.count() == 6

    def test_refused_posts_count_too(self, program):
        bot = Client(REMOTE_ADDR="10.9.9.9")
        for n in range(3):
            apply(program, bot, email=f"b{n}@example.com", leave_blank="x")
        apply(program, bot, email="not an email")
        apply(program, bot, stamp="forged")
        assert apply(program, bot, email="late@example.com").status_code == 429
        assert not PartnerApplication.objects.exists()

    def test_the_count_spans_programs(self, program):
        other = ProgramFactory(applications_open=True)
        for n in range(5):
            apply(program if n % 2 else other, email=f"p{n}@example.com")
        assert apply(other, email="late@example.com").status_code == 429

    def test_a_post_without_the_csrf_token_is_refused_and_nothing_is_stored(self, program):
        browser = Client(enforce_csrf_checks=True)
        assert browser.post(page(program), form(program)).status_code == 403
        assert not PartnerApplication.objects.exists()
        shown = browser.get(page(program)).content.decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', shown)
        assert token is not None
        accepted = browser.post(page(program), form(program, csrfmiddlewaretoken=token.group(1)))
        assert accepted.status_code == 200 and PartnerApplication.objects.count() == 1


class TestRefusedInput:
    @pytest.mark.parametrize(
        ("fields", "field", "message"),
        [
            ({"name": ""}, "name", "This field is required."),
            ({"name": "   "}, "name", "This field is required."),
            ({"name": "x" * 201}, "name", "at most 200 characters"),
            ({"name": "Pat\x00"}, "name", "Null characters are not allowed."),
            ({"email": ""}, "email", "This field is required."),
            ({"email": "not an email"}, "email", "Enter a valid email address."),
            ({"email": "a" * 250 + "@example.com"}, "email", "at most 254 characters"),
            ({"email": "pat\x00@example.com"}, "email", "Null characters are not allowed."),
            ({"website": "javascript:alert(1)"}, "website", "Enter a valid URL."),
            ({"website": "ftp://files.example.com"}, "website", "Enter a valid URL."),
            ({"website": "https://" + "a" * 500 + ".com"}, "website", "at most 500 characters"),
            ({"promotion": ""}, "promotion", "This field is required."),
            ({"promotion": "x" * 2001}, "promotion", "at most 2000 characters"),
            ({"promotion": "ok\x00"}, "promotion", "Null characters are not allowed."),
            ({"terms": ""}, "terms", "Accept the program&#x27;s terms to apply."),
        ],
    )
    def test_invalid_input_answers_400_with_the_fields_message_and_stores_nothing(
        self, program, fields, field, message
    ):
        data = form(program, **fields)
        if fields.get("terms") == "":
            del data["terms"]
        response = Client().post(page(program), data)
        assert response.status_code == 400
        text = response.content.decode()
        assert message in text and f'id="id_{field}_error"' in text
        # The visitor's input is kept to correct, and the stamp still counts from when the form was first shown.
        assert f'value="{data["stamp"]}"' in text
        assert not PartnerApplication.objects.exists() and mail.outbox == []

    def test_promotion_of_exactly_2000_characters_is_accepted(self, program):
        assert apply(program, promotion="x" * 2000).status_code == 200
        assert len(PartnerApplication.objects.get().promotion) == 2000

    def test_other_methods_are_refused(self, program):
        assert Client().put(page(program)).status_code == 405
        assert Client().delete(page(program)).status_code == 405


class TestDecisions:
    def approve(self, client, application):
        return client.post(f"/programs/{application.program_id}/applications/{application.pk}/approve")

    def reject(self, client, application):
        return client.post(f"/programs/{application.program_id}/applications/{application.pk}/reject")

    @pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
    def test_an_owner_or_admin_approves_the_applicant_is_invited(self, program, role):
        application = pending(program, name="Pat", email="pat@example.com")
        client = signed_in(program, role)
        response = self.approve(client, application)
        assert response.status_code == 302
        assert response["Location"] == f"/programs/{program.pk}/partners#applications"
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.APPROVED and application.decided_at is not None
        assert application.decided_by is not None and application.decided_by.memberships.get().role == role
        [message] = mail.outbox
        assert message.to == ["pat@example.com"]
        assert message.subject == "Your application to the Acme Pro partner program is approved"
        assert LINK.search(str(message.body))
        partner = Partner.objects.get()
        assert (partner.workspace_id, partner.name, partner.email) == (program.workspace_id, "Pat", "pat@example.com")
        assert application.partner == partner
        invitation = PartnerInvitation.objects.get()
        assert (invitation.program, invitation.partner, invitation.email) == (program, partner, "pat@example.com")
        shown = client.get(response["Location"]).content.decode()
        assert "Pat&#x27;s application approved: an invitation to the partner portal was sent to pat@example.com" in (
            shown
        )
        assert f'id="application-{application.pk}"' not in shown

    def test_approval_reuses_the_workspaces_partner_with_that_email(self, program):
        existing = PartnerFactory(workspace=program.workspace, name="Pat Known", email="Pat@Example.com")
        application = pending(program, email="pat@example.com")
        self.approve(signed_in(program), application)
        application.refresh_from_db()
        assert application.partner == existing and Partner.objects.count() == 1

    def test_the_owner_invitation_email_keeps_its_own_words(self, program):
        owner = MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user
        client = Client()
        client.force_login(owner)
        client.post(f"/programs/{program.pk}/partners/invite", {"name": "Kim", "email": "kim@example.com"})
        [message] = mail.outbox
        assert message.subject == "You are invited to the Acme Pro partner program"
        assert message.body.startswith(
            f"{owner.get_username()} invites you to the Acme Pro partner program.\n\nAccept the invitation"
        )

    def test_an_owner_rejects_no_email_is_sent(self, program):
        application = pending(program)
        client = signed_in(program)
        response = self.reject(client, application)
        assert response.status_code == 302
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.REJECTED
        assert application.decided_by is not None and application.decided_at is not None
        assert application.partner is None
        assert mail.outbox == [] and not Partner.objects.exists() and not PartnerInvitation.objects.exists()
        assert "Pat&#x27;s application rejected." in client.get(response["Location"]).content.decode()

    @pytest.mark.parametrize("decide", ["approve", "reject"])
    def test_a_member_sees_the_list_but_may_not_decide(self, program, decide):
        application = pending(program)
        member = signed_in(program, Role.MEMBER)
        shown = member.get(f"/programs/{program.pk}/partners").content.decode()
        assert f'id="application-{application.pk}"' in shown and "My blog" in shown
        assert "/approve" not in shown and "/reject" not in shown and "applications/settings" not in shown
        assert getattr(self, decide)(member, application).status_code == 403
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.PENDING and mail.outbox == []

    @pytest.mark.parametrize("decide", ["approve", "reject"])
    def test_an_owner_of_another_workspace_is_refused(self, program, decide):
        application = pending(program)
        outsider = signed_in(ProgramFactory())
        assert getattr(self, decide)(outsider, application).status_code == 403
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.PENDING and mail.outbox == []

    @pytest.mark.parametrize("decide", ["approve", "reject"])
    def test_signed_out_goes_to_sign_in(self, program, decide):
        application = pending(program)
        response = getattr(self, decide)(Client(), application)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.PENDING

    @pytest.mark.parametrize("decide", ["approve", "reject"])
    def test_another_programs_application_in_the_path_is_404(self, program, decide):
        same_workspace = pending(ProgramFactory(workspace=program.workspace, applications_open=True))
        other_workspace = pending(ProgramFactory(applications_open=True))
        owner = signed_in(program)
        for application in (same_workspace, other_workspace):
            path = f"/programs/{program.pk}/applications/{application.pk}/{decide}"
            assert owner.post(path).status_code == 404
        assert owner.post(f"/programs/{program.pk}/applications/99999999999999999999999/{decide}").status_code == 404
        assert set(PartnerApplication.objects.values_list("status", flat=True)) == {"pending"}
        assert mail.outbox == []

    def test_a_failed_email_leaves_the_application_pending_and_says_so(self, program):
        application = pending(program)
        owner = signed_in(program)
        with mock.patch("portal.services.send_mail", side_effect=SMTPException("mail server down")):
            response = self.approve(owner, application)
        assert response.status_code == 302
        shown = owner.get(response["Location"]).content.decode()
        assert "could not be sent: nothing was changed" in shown
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.PENDING
        assert not PartnerInvitation.objects.exists() and not Partner.objects.exists()

    def test_deciding_twice_says_so_and_changes_nothing(self, program):
        application = pending(program)
        owner = signed_in(program)
        self.approve(owner, application)
        application.refresh_from_db()
        decided = (application.status, application.decided_at, application.decided_by_id)
        admin = signed_in(program, Role.ADMIN)
        for again in (self.approve, self.reject):
            response = again(admin, application)
            assert response.status_code == 302
            shown = admin.get(response["Location"]).content.decode()
            assert "Pat&#x27;s application was approved already: nothing was changed." in shown
        application.refresh_from_db()
        assert (application.status, application.decided_at, application.decided_by_id) == decided
        assert len(mail.outbox) == 1 and PartnerInvitation.objects.count() == 1

    def test_a_rejected_application_is_not_approved_after(self, program):
        application = pending(program)
        owner = signed_in(program)
        self.reject(owner, application)
        shown = owner.get(self.approve(owner, application)["Location"]).content.decode()
        assert "was rejected already" in shown
        application.refresh_from_db()
        assert application.status == PartnerApplication.Status.REJECTED and mail.outbox == []

    def test_decisions_need_post_and_the_csrf_token(self, program):
        application = pending(program)
        user = MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user
        strict = Client(enforce_csrf_checks=True)
        strict.force_login(user)
        assert strict.post(f"/programs/{program.pk}/applications/{application.pk}/approve").status_code == 403
        assert strict.post(f"/programs/{program.pk}/applications/settings", {}).status_code == 403
        loose = Client()
        loose.force_login(user)
        assert loose.get(f"/programs/{program.pk}/applications/{application.pk}/approve").status_code == 405
        application.refresh_from_db()
        program.refresh_from_db()
        assert application.status == PartnerApplication.Status.PENDING and program.applications_open
        assert mail.outbox == []


class TestThePartnersPage:
    def test_the_section_lists_pending_applications_oldest_first_with_the_public_address(self, program):
        first = pending(program, name="First", email="first@example.com", website="https://first.example")
        second = pending(program, name="Second <b>", email="second@example.com", promotion="Line one\nline two")
        decided = pending(program, name="Decided", email="decided@example.com", status="rejected")
        shown = signed_in(program).get(f"/programs/{program.pk}/partners").content.decode()
        assert 'id="applications"' in shown and "2 applications waiting for a decision" in shown
        assert shown.index(f'id="application-{first.pk}"') < shown.index(f'id="application-{second.pk}"')
        assert f'id="application-{decided.pk}"' not in shown
        assert "Second &lt;b&gt;" in shown and "Line one<br>line two" in shown
        assert 'href="https://first.example"' in shown
        assert f"https://track.example.test/join/{program.pk}" in shown
        assert f"/programs/{program.pk}/applications/{first.pk}/approve" in shown
        assert f"/programs/{program.pk}/applications/{first.pk}/reject" in shown
        assert "applications/settings" in shown

    def test_an_earlier_rejection_is_noted(self, program):
        pending(program, email="again@example.com", status="rejected")
        pending(program, email="again@example.com")
        shown = signed_in(program).get(f"/programs/{program.pk}/partners").content.decode()
        assert "rejected before" in shown

    def test_closed_applications_are_said_so(self, program):
        program.applications_open = False
        program.save()
        shown = signed_in(program, Role.MEMBER).get(f"/programs/{program.pk}/partners").content.decode()
        assert "is closed: it answers Not found" in shown and "No application is waiting" in shown

    @pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
    def test_the_settings_form_opens_closes_and_sets_auto_approval(self, program, role):
        client = signed_in(program, role)
        url = f"/programs/{program.pk}/applications/settings"
        response = client.post(url, {"applications_open": "on", "applications_auto_approve": "on"})
        assert response.status_code == 302 and response["Location"].endswith("#applications")
        program.refresh_from_db()
        assert (program.applications_open, program.applications_auto_approve) == (True, True)
        assert "approved as they arrive" in client.get(response["Location"]).content.decode()
        client.post(url, {})
        program.refresh_from_db()
        assert (program.applications_open, program.applications_auto_approve) == (False, False)
        assert Client().get(page(program)).status_code == 404

    def test_a_member_or_an_outsider_may_not_change_the_settings(self, program):
        url = f"/programs/{program.pk}/applications/settings"
        assert signed_in(program, Role.MEMBER).post(url, {}).status_code == 403
        assert signed_in(ProgramFactory()).post(url, {}).status_code == 403
        assert Client().post(url, {}).status_code == 302
        program.refresh_from_db()
        assert program.applications_open


class TestAdmin:
    def test_the_admin_actions_approve_and_reject(self, program):
        superuser = User.objects.create_superuser("root", "root@example.com", PASSWORD)
        client = Client()
        client.force_login(superuser)
        one = pending(program, email="one@example.com")
        two = pending(program, email="two@example.com")
        url = "/admin/programs/partnerapplication/"
        assert client.get(url).status_code == 200
        assert client.get(f"{url}{one.pk}/change/").status_code == 200
        assert client.get(f"{url}add/").status_code == 403
        response = client.post(url, {"action": "approve_selected", "_selected_action": [one.pk]})
        assert response.status_code == 302
        response = client.post(url, {"action": "reject_selected", "_selected_action": [one.pk, two.pk]})
        one.refresh_from_db()
        two.refresh_from_db()
        assert (one.status, two.status) == ("approved", "rejected")
        assert one.decided_by == superuser == two.decided_by
        assert [message.to for message in mail.outbox] == [["one@example.com"]]
        assert "1 were decided already" in client.get(url).content.decode()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_approvals_at_once_make_one_invitation():
    program = ProgramFactory(name="Acme Pro", applications_open=True)
    application = pending(program)
    deciders = [UserFactory(), UserFactory()]
    holding = threading.Event()
    rival_done = threading.Event()
    create = services.invitation_create

    def create_once_the_rival_queues(**kwargs):
        # The first approval holds the row lock until the second waits on it (or, were the lock missing, until the
        # second has finished on its own).
        if not holding.is_set():
            holding.set()
            wait_for_lock_waiters(1, or_until=rival_done.is_set)
        return create(**kwargs)

    def approve(n: int) -> str:
        if n == 1:
            assert holding.wait(timeout=30)
        try:
            application_approve(application=PartnerApplication.objects.get(pk=application.pk), decided_by=deciders[n])
            return "approved"
        except ApplicationDecided as decided:
            return f"decided already: {decided.status}"
        finally:
            if n == 1:
                rival_done.set()

    with mock.patch.object(services, "invitation_create", create_once_the_rival_queues):
        results = run_together(2, approve)
    assert sorted(results) == ["approved", "decided already: approved"]
    assert PartnerInvitation.objects.count() == 1 and Partner.objects.count() == 1
    assert len(mail.outbox) == 1
    application.refresh_from_db()
    assert application.status == PartnerApplication.Status.APPROVED
