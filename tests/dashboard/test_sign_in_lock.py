"""Issue 37, for owners: the dashboard's sign-in (/accounts/login/) and the admin's had no limit at all. Failures
are counted per username as the portal counts them per email (core.sign_in_lock): past SIGN_IN_LOCK_FAILURES from
any addresses the username is locked, the right password refused too, unknown usernames alike."""

from datetime import timedelta

import pytest
import time_machine
from django.core.cache import caches
from django.test import Client
from django.utils import timezone

from core.sign_in_lock import sign_in_locked_message
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pass-word-123"  # UserFactory's
FAILURES = 10
LOCK_SECONDS = 900


@pytest.fixture(autouse=True)
def lock_settings(settings):
    caches[settings.RATELIMIT_USE_CACHE].clear()
    settings.SIGN_IN_LOCK_FAILURES = FAILURES
    settings.SIGN_IN_LOCK_WINDOW_SECONDS = 900
    settings.SIGN_IN_LOCK_SECONDS = LOCK_SECONDS
    settings.TRUSTED_PROXY_COUNT = 1


def from_address(n: int) -> Client:
    return Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"198.51.100.{n + 1}")


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_forty_wrong_passwords_from_forty_addresses_lock_the_owner_and_the_right_one_is_refused(path):
    owner = UserFactory(username="ada@example.com", is_staff=True)
    answers = [from_address(n).post(path, {"username": owner.username, "password": f"guess {n}"}) for n in range(40)]
    # Django's sign-in pages answer a wrong password with the form again (200); a locked username with 429 here.
    assert all(answer.status_code == 200 for answer in answers[:FAILURES])
    message = sign_in_locked_message(LOCK_SECONDS, name="username")
    assert all(message in answer.content.decode() for answer in answers[FAILURES:])
    locked = from_address(40).post(path, {"username": owner.username, "password": PASSWORD})
    assert message in locked.content.decode() and "_auth_user_id" not in locked.wsgi_request.session
    if path == "/accounts/login/":
        assert locked.status_code == 429

    with time_machine.travel(timezone.now() + timedelta(seconds=LOCK_SECONDS + 1)):
        opened = from_address(41).post(path, {"username": owner.username, "password": PASSWORD})
        assert opened.status_code == 302


def test_an_unknown_username_is_locked_the_same_way():
    UserFactory(username="ada@example.com")
    for username in ("ada@example.com", "nobody@example.com"):
        for n in range(FAILURES):
            assert from_address(n).post("/accounts/login/", {"username": username, "password": "x"}).status_code == 200
        locked = from_address(FAILURES).post("/accounts/login/", {"username": username, "password": "x"})
        assert (
            locked.status_code == 429
            and sign_in_locked_message(LOCK_SECONDS, name="username") in locked.content.decode()
        )


def test_a_right_password_below_the_limit_signs_in():
    owner = UserFactory(username="ada@example.com")
    for n in range(FAILURES - 1):
        from_address(n).post("/accounts/login/", {"username": owner.username, "password": "x"})
    assert (
        from_address(0).post("/accounts/login/", {"username": owner.username, "password": PASSWORD}).status_code == 302
    )
