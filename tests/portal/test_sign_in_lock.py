"""Issue 37: the portal's sign-in was limited per client address only, so 40 wrong passwords from 40 addresses were
answered one by one and the right one then signed in. Failures are now also counted per account (the email, trimmed
and lower-cased, whatever the address): past SIGN_IN_LOCK_FAILURES the email is locked for SIGN_IN_LOCK_SECONDS,
the right password refused too, and an email without an account is counted and locked the same way."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.core.cache import caches
from django.test import Client
from django.utils import timezone

from core.sign_in_lock import sign_in_locked_message
from portal.services import account_create
from portal.session import COOKIE
from programs.models import PartnerAccount

pytestmark = pytest.mark.django_db

PASSWORD = "long enough passphrase 1"
FAILURES = 10
LOCK_SECONDS = 900
# As core.clientip reads them: REMOTE_ADDR alone, or behind one trusted proxy the right-most X-Forwarded-For value.
CLIENT_ADDRESS_WAYS = ("remote_addr", "x_forwarded_for")


@pytest.fixture(autouse=True)
def lock_settings(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()
    settings.SIGN_IN_LOCK_FAILURES = FAILURES
    settings.SIGN_IN_LOCK_WINDOW_SECONDS = 900
    settings.SIGN_IN_LOCK_SECONDS = LOCK_SECONDS


@pytest.fixture
def account() -> PartnerAccount:
    return account_create("pat@example.com", PASSWORD)


def client_from(way: str, n: int, settings) -> Client:
    """A browser at the n-th of 40 client addresses, as the service's client-ip logic sees it."""
    if way == "remote_addr":
        settings.TRUSTED_PROXY_COUNT = 0
        return Client(REMOTE_ADDR=f"198.51.100.{n + 1}")
    settings.TRUSTED_PROXY_COUNT = 1
    return Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"203.0.113.7, 198.51.100.{n + 1}")


def sign_in(client: Client, email: str, password: str):
    return client.post("/portal/sign-in", {"email": email, "password": password})


@pytest.mark.parametrize("way", CLIENT_ADDRESS_WAYS)
def test_forty_wrong_passwords_from_forty_addresses_lock_the_account_and_the_right_one_is_refused(
    account, settings, way
):
    answers = [sign_in(client_from(way, n, settings), "pat@example.com", f"guess {n}") for n in range(40)]
    assert [answer.status_code for answer in answers] == [400] * FAILURES + [429] * (40 - FAILURES)
    locked = sign_in(client_from(way, 40, settings), "pat@example.com", PASSWORD)
    assert locked.status_code == 429 and COOKIE not in locked.cookies
    assert sign_in_locked_message(LOCK_SECONDS) in locked.content.decode()
    # Case and spaces do not make another account of it.
    assert sign_in(client_from(way, 41, settings), " PAT@Example.com", PASSWORD).status_code == 429

    with time_machine.travel(timezone.now() + timedelta(seconds=LOCK_SECONDS + 1)):
        opened = sign_in(client_from(way, 42, settings), "pat@example.com", PASSWORD)
        assert opened.status_code == 302 and COOKIE in opened.cookies


def test_the_lock_says_nothing_of_whether_the_account_exists(account, settings):
    def locked_answer(email: str):
        for n in range(FAILURES):
            assert sign_in(client_from("remote_addr", n, settings), email, "guess").status_code == 400
        return sign_in(client_from("remote_addr", FAILURES, settings), email, "guess")

    known, unknown = locked_answer("pat@example.com"), locked_answer("nobody@example.com")
    assert known.status_code == unknown.status_code == 429
    strip = re.compile(rb'value="[^"]*@example.com"|name="csrfmiddlewaretoken" value="[^"]*"')
    assert strip.sub(b"", known.content) == strip.sub(b"", unknown.content)


def test_failures_below_the_limit_lock_nothing_and_other_accounts_are_untouched(account, settings):
    account_create("sam@example.com", PASSWORD)
    for n in range(FAILURES - 1):
        assert sign_in(client_from("remote_addr", n, settings), "pat@example.com", "guess").status_code == 400
    assert sign_in(client_from("remote_addr", 0, settings), "pat@example.com", PASSWORD).status_code == 302
    for n in range(FAILURES):
        sign_in(client_from("remote_addr", n, settings), "sam@example.com", "guess")
    assert sign_in(client_from("remote_addr", 0, settings), "sam@example.com", PASSWORD).status_code == 429
    assert sign_in(client_from("remote_addr", 1, settings), "pat@example.com", PASSWORD).status_code == 302


def test_a_locked_account_is_refused_on_an_invitation_page_too(account, settings, mailoutbox):
    from tests.factories import MembershipFactory, ProgramFactory

    program = ProgramFactory()
    owner = Client()
    owner.force_login(MembershipFactory.create(workspace=program.workspace).user)
    owner.post(f"/programs/{program.pk}/partners/invite", {"name": "Pat", "email": "pat@example.com"})
    [message] = mailoutbox
    link = re.search(r"/portal/invitations/[A-Za-z0-9_-]+", str(message.body))
    assert link is not None
    for n in range(FAILURES):
        sign_in(client_from("remote_addr", n, settings), "pat@example.com", "guess")
    refused = client_from("remote_addr", 99, settings).post(link.group(0), {"password": PASSWORD})
    assert refused.status_code == 429 and sign_in_locked_message(LOCK_SECONDS) in refused.content.decode()
