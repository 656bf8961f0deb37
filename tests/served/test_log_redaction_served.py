"""No key reaches the server's logs (issue 22): gunicorn as deployed (config/gunicorn.conf.py, DEBUG off, the
access log on in its default format, which writes the request line and the Referer) is sent a live key as
`?api_key=…`, in a Referer and in a path Django logs as not found, and the whole output (access log, gunicorn's
error log, the application log) holds none of it, nor the email sent along. Nor a partner's password-reset link
(issue 37): found in a log, an unused one would reset the account."""

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from portal.account import reset_link_token
from portal.services import account_create
from programs.keys import AGENT_KEY_PREFIX, generate_key
from tests.factories import ProgramFactory
from tests.gunicorn import gunicorn_serving

from .conftest import _test_database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

EMAIL = "jane@corp.example"
LOG_WAIT_SECONDS = 10
SECRET_KEY = "log-redaction-served-tests-only"


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    log = tmp_path / "gunicorn.log"
    env = {
        "DATABASE_URL": _test_database_url(),
        "DEBUG": "false",
        "SECRET_KEY": SECRET_KEY,
        "ALLOWED_HOSTS": "127.0.0.1",
        "REDIS_URL": "",
        "INSTANCE_ID": "",
        "ACCESS_LOG": "-",  # the default, said out loud: this test is about it
        "LOG_LEVEL": "INFO",
    }
    with gunicorn_serving(env=env, log=log, workers=1) as url:
        yield url, log


def logged_lines(log: Path, fragment: str, count: int) -> str:
    """The log once `count` access lines name `fragment` (gunicorn writes one just after answering)."""
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while True:
        text = log.read_text()
        if text.count(fragment) >= count or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def test_a_key_sent_in_the_query_a_referer_or_a_path_is_in_no_log_line(deployed):
    url, log = deployed
    program = ProgramFactory()
    live_key, agent_key = program.raw_api_key, generate_key(AGENT_KEY_PREFIX)
    referer = f"https://shop.example/checkout?token={agent_key}&email={EMAIL}"

    with httpx.Client(base_url=url, timeout=15) as client:
        config = client.get(
            "/api/v1/track/config",
            params={"program_id": program.pk, "api_key": live_key},
            headers={"Referer": referer},
        )
        sale = client.post(
            "/api/v1/track/sale",
            params={"api_key": live_key},
            json={"transaction_id": "txn_log", "amount_cents": 100, "customer_key": EMAIL},
            headers={"Authorization": f"Bearer {live_key}"},
        )
        missing = client.get(f"/api/v1/nowhere/{live_key}", params={"api_key": live_key})
    assert (config.status_code, missing.status_code) == (200, 404) and sale.status_code in (200, 400)

    text = logged_lines(log, "api_key=[redacted]", 3)
    for secret in (live_key, agent_key, EMAIL):
        assert secret not in text, (secret, text[-3000:])
    # The lines are there, with what is safe to keep.
    assert f"/api/v1/track/config?program_id={program.pk}&api_key=[redacted]" in text, text[-3000:]
    assert "/api/v1/track/sale?api_key=[redacted]" in text
    assert "/api/v1/nowhere/aff_[redacted]?api_key=[redacted]" in text
    assert "https://shop.example/checkout?token=[redacted]&email=j***@corp.example" in text
    assert "Not Found: /api/v1/nowhere/aff_[redacted]" in text  # django.request, through the application log


def test_a_password_reset_link_is_in_no_log_line(deployed, settings):
    url, log = deployed
    settings.SECRET_KEY = SECRET_KEY  # the link the server would email: it signs with its own key
    token = reset_link_token(account_create(EMAIL, "an old pass-word 123"))
    # Of the same shape, as a guesser would try: refused (410), which Django logs by its path.
    forged = f"{token.rpartition('-')[0]}-{'0' * 32}"
    page = f"/portal/password-reset/{token}"

    with httpx.Client(base_url=url, timeout=15) as client:
        opened = client.get(page)
        # No CSRF cookie: refused (403), and Django's security log names the path.
        posted = client.post(page, data={"password": "a new pass-word 456", "password2": "a new pass-word 456"})
        gone = client.get(f"/portal/password-reset/{forged}")
        onward = client.get("/portal/sign-in", headers={"Referer": f"{url}{page}"})
    assert (opened.status_code, posted.status_code, gone.status_code, onward.status_code) == (200, 403, 410, 200)

    text = logged_lines(log, '"GET /portal/sign-in ', 1)  # the last request's line: the others are written before it
    for secret in (token, forged, token.partition("-")[2]):
        assert secret not in text, (secret, text[-3000:])
    assert "GET /portal/password-reset/[redacted] " in text, text[-3000:]
    assert "POST /portal/password-reset/[redacted] " in text
    assert f'"{url}/portal/password-reset/[redacted]"' in text  # the Referer of the next page
    assert "Gone: /portal/password-reset/[redacted]" in text  # django.request, through the application log
    assert "Forbidden (CSRF cookie not set.): /portal/password-reset/[redacted]" in text
