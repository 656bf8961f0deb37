"""The owners' password reset tells no one which addresses have an account (issue 37, as item 9 for the portal):
Django's view sent the email inside the request, so a known address answered later by the mail server's latency.
Now the request queues the same task for every address, once the answer is written, and the task alone finds the
user and sends Django's email."""

import re

import pytest
from django.core import mail
from django.http import HttpRequest
from django.test import Client, RequestFactory

from dashboard.password_reset import OwnerPasswordResetView
from tests.factories import UserFactory
from tests.helpers import tasks_run
from tests.portal.test_account_and_emails import written

pytestmark = pytest.mark.django_db

reset_view = OwnerPasswordResetView.as_view()


def reset_request(email: str) -> HttpRequest:
    """The POST as the view gets it, before any server closes its answer (Django's test client closes it)."""
    request = RequestFactory().post("/accounts/password_reset/", {"email": email})
    request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
    return request


def test_the_email_goes_out_after_the_answer_for_a_known_address_and_an_unknown_one_alike(settings):
    UserFactory(email="owner@example.com")
    settings.EMAIL_BACKEND = "tests.portal.test_account_and_emails.SlowSmtp"
    with tasks_run() as queued:
        answers = []
        for email in ("owner@example.com", "nobody@example.com"):
            sent = len(mail.outbox)
            response = reset_view(reset_request(email))
            assert len(mail.outbox) == sent, "nothing is sent while the view answers"
            answers.append((response.status_code, response["Location"]))
            written(response)
    assert answers == [(302, "/accounts/password_reset/done/")] * 2
    [(known_task, known_args), (unknown_task, unknown_args)] = queued
    assert known_task == unknown_task == "dashboard.password_reset_email"
    assert known_args[1:] == unknown_args[1:] == ("track.example.test", True)
    [message] = mail.outbox
    assert message.to == ["owner@example.com"]
    assert re.search(r"https://track\.example\.test/accounts/reset/[^/\s]+/[^/\s]+/", str(message.body))


def test_nothing_is_sent_or_queued_while_the_view_answers(settings):
    UserFactory(email="owner@example.com")
    with tasks_run() as queued:
        response = reset_view(reset_request("owner@example.com"))
        assert (queued, mail.outbox) == ([], [])
        written(response)
    assert [name for name, _ in queued] == ["dashboard.password_reset_email"] and len(mail.outbox) == 1


def test_the_page_still_answers_through_the_test_client():
    response = Client().post("/accounts/password_reset/", {"email": "nobody@example.com"}, follow=True)
    assert response.status_code == 200 and response.redirect_chain == [("/accounts/password_reset/done/", 302)]
