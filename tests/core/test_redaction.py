"""core.redaction: what is masked in every log (request log rows, the application log, gunicorn's logs), checked
against the secrets each app really makes, and what is left alone so the log stays useful."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator

from cli_api.models import LOGIN_TOKEN_PREFIX
from cli_api.tokens import id_token_issue
from core.gunicorn_logging import RedactedAtoms, RedactingFilter
from core.logging import RedactingFormatter
from core.redaction import REDACTED, email_mask, luhn_valid, redact, redact_line, redact_text
from portal.account import reset_link_token
from programs.keys import AGENT_KEY_PREFIX, PROGRAM_KEY_PREFIX, PROGRAM_TEST_KEY_PREFIX, generate_key
from programs.models import PartnerAccount
from webhooks.signing import secret_generate

CARD = "4242 4242 4242 4242"


def password_reset_token(account_id: int = 1) -> str:
    """A portal password-reset link's token (`<id>-<timestamp>-<hash>`), as the portal makes it."""
    return reset_link_token(PartnerAccount(pk=account_id, email="jane@corp.example", password="pbkdf2_sha256$x"))


def owner_password_reset_token() -> str:
    """Django's own reset token (`<timestamp>-<hash>`), of an owner's /accounts/reset/<uidb64>/<token>/ link."""
    owner = get_user_model()(pk=1, username="ada", email="ada@corp.example", password="pbkdf2_sha256$x")
    return default_token_generator.make_token(owner)


def secrets_of_every_kind() -> dict[str, str]:
    """What each app issues, made by its own generator: a change of shape there fails here."""
    return {
        "live program key": generate_key(PROGRAM_KEY_PREFIX),
        "test program key": generate_key(PROGRAM_TEST_KEY_PREFIX),
        "legacy program key": generate_key(""),
        "agent key": generate_key(AGENT_KEY_PREFIX),
        "CLI token": generate_key(LOGIN_TOKEN_PREFIX),
        "webhook secret": secret_generate(),
        "Stripe secret key": "sk_live_51Hx" + "a1B2c3D4" * 10,
        "portal password-reset token": password_reset_token(),
        "portal password-reset token of a large account id": password_reset_token(10**12),
        "dashboard password-reset token": owner_password_reset_token(),
    }


@pytest.mark.parametrize("kind", list(secrets_of_every_kind()))
def test_every_kind_of_secret_is_redacted_alone_in_text_and_in_a_url(kind):
    for _ in range(20):  # random bodies: a character class the pattern misses shows within a few
        secret = secrets_of_every_kind()[kind]
        for text in (secret, f"refund for jane: {secret}.", f"https://shop.example/cb?s={secret}&x=1"):
            redacted = redact_text(text)
            assert secret not in redacted and REDACTED in redacted, (kind, text, redacted)


def test_a_prefixed_key_keeps_its_prefix_so_the_reader_knows_what_it_was():
    assert redact_text(generate_key(PROGRAM_TEST_KEY_PREFIX)) == "aff_test_[redacted]"
    assert redact_text(generate_key(AGENT_KEY_PREFIX)) == "agt_[redacted]"
    assert redact_text(secret_generate()) == "whsec_[redacted]"


@pytest.mark.django_db
def test_a_cli_login_id_token_is_redacted():
    token = id_token_issue(user_id=1, session_digest="d" * 64)
    assert redact_text(f"id_token {token} sent") == f"id_token {REDACTED} sent"


def test_a_password_reset_link_is_redacted_in_a_request_line_a_referer_and_a_request_log_row():
    token = password_reset_token(4242)
    path = f"/portal/password-reset/{token}"
    assert redact_line(f"GET {path} HTTP/1.1") == f"GET /portal/password-reset/{REDACTED} HTTP/1.1"
    assert redact_line(f"https://shop.example{path}") == f"https://shop.example/portal/password-reset/{REDACTED}"
    assert redact({"route": path, "message": f"Gone: {path}"}) == {
        "route": f"/portal/password-reset/{REDACTED}",
        "message": f"Gone: /portal/password-reset/{REDACTED}",
    }
    # An owner's link, from Django's own password reset (/accounts/reset/, django.contrib.auth.urls).
    owner_line = f"GET /accounts/reset/MQ/{owner_password_reset_token()}/ HTTP/1.1"
    assert redact_line(owner_line) == f"GET /accounts/reset/MQ/{REDACTED}/ HTTP/1.1"


def test_a_percent_encoded_webhook_secret_in_a_url_is_redacted():
    secret = secret_generate()
    encoded = secret.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    assert redact_text(f"https://x.test/?s={encoded}") == "https://x.test/?s=whsec_[redacted]"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("jane@corp.example", "j***@corp.example"),
        ("Contact: Jane.Doe+shop@mail.corp.example, thanks", "Contact: J***@mail.corp.example, thanks"),
        ("https://shop.test/p?email=jane%40corp.example&x=1", "https://shop.test/p?email=j***@corp.example&x=1"),
        ("a@b.io and c@d.io", "a***@b.io and c***@d.io"),
        ("j***@corp.example", "j***@corp.example"),  # masked once is masked for good
    ],
)
def test_emails_keep_their_first_character_and_domain(text, masked):
    assert redact_text(text) == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (CARD, "**** **** **** 4242"),
        ("4242-4242-4242-4242", "****-****-****-4242"),
        ("card 4242424242424242 exp 12/34", "card ************4242 exp 12/34"),
        ("4242 4242 4242 4242 12 34", "**** **** **** 4242 12 34"),  # an expiry in the same run
        ("3782 822463 10005", "**** ****** *0005"),  # Amex, 15 digits
    ],
)
def test_card_numbers_keep_their_last_four_digits(text, masked):
    assert redact_text(text) == masked


def test_a_card_number_sent_as_a_json_number_is_masked():
    assert redact({"customer_key": 4242424242424242, "amount_cents": 4900}) == {
        "customer_key": "************4242",
        "amount_cents": 4900,
    }


@pytest.mark.parametrize(
    "text",
    [
        "txn_1",
        "cust_42_1748779200000_9e8d7c6b",  # a click id: its millisecond timestamp is glued to the id
        "1748779201234",  # 13 digits that fail the Luhn check: an order id, not a card
        # Fixed, not uuid4(): the two test processes must collect the same parameters.
        "fb6a4abd-7f6b-4cf3-904d-ab9870844da2",
        "8C812B9E-6EC5-450E-9B01-C2CFF999B2A2",
        "pi_3MtwBwLkdIwHu7ix28a3tqPa",
        "https://acme.example.com/pricing?aff=jane&utm_source=newsletter",
        "how-to-choose-the-best-running-shoes-in-2026",
        "staff_member_with_a_rather_long_name",
        "aff_unknown",
        "user@localhost",
        "2026-03-01T12:00:03",
    ],
)
def test_ids_urls_and_dates_are_left_alone(text):
    assert redact_text(text) == text


def test_luhn():
    assert luhn_valid("4242424242424242") and not luhn_valid("4242424242424241")


def test_email_mask_of_a_field_that_must_be_an_email():
    assert (email_mask("ada@example.com"), email_mask("no-at-sign")) == ("a***@example.com", "***")


def test_redact_reaches_nested_values_and_keys():
    key = generate_key(PROGRAM_KEY_PREFIX)
    value = {"a": [{"b": f"x {key}"}, ("jane@corp.example",)], "jane@corp.example": 1, "ok": True, "n": None}
    assert redact(value) == {
        "a": [{"b": "x aff_[redacted]"}, ["j***@corp.example"]],
        "j***@corp.example": 1,
        "ok": True,
        "n": None,
    }


@pytest.mark.parametrize(
    ("line", "redacted"),
    [
        ("GET /api/v1/track/config?program_id=1&api_key=legacy123 HTTP/1.1", "program_id=1&api_key=[redacted] "),
        ("/cli/auth/poll?state=abc", "state=[redacted]"),
        ("/stripe/callback?code=ac_123&state=xyz", "code=[redacted]&state=[redacted]"),
        ("https://x.test/?accessToken=abc&Password=p&x-signature=s&aff=jane", "accessToken=[redacted]&Password="),
        ("api_key=x&page=2", "api_key=[redacted]&page=2"),
        ("/p?api%5Fkey=x", "api%5Fkey=[redacted]"),
    ],
)
def test_a_log_line_loses_the_values_of_secret_named_query_parameters(line, redacted):
    assert redacted in redact_line(line)


def test_a_log_line_keeps_plain_query_parameters():
    line = "GET /api/v1/track/config?program_id=1&aff=jane&page=2 HTTP/1.1"
    assert redact_line(line) == line


def test_the_application_log_formatter_redacts_message_and_traceback():
    key = generate_key(PROGRAM_KEY_PREFIX)
    try:
        raise ValueError(f"bad value jane@corp.example {key}")
    except ValueError:
        record = logging.LogRecord(
            "django.request", logging.ERROR, __file__, 1, "Failed: %s", (f"/p?token={key}",), None
        )
        record.exc_info = sys.exc_info()
    line = RedactingFormatter("%(message)s").format(record)
    assert key not in line and "jane@corp.example" not in line
    assert "Failed: /p?token=[redacted]" in line and "j***@corp.example aff_[redacted]" in line


def test_gunicorn_atoms_are_redacted_when_the_format_reads_them():
    key = generate_key(PROGRAM_KEY_PREFIX)
    atoms = RedactedAtoms(
        {
            "r": f"GET /api/v1/track/config?program_id=1&api_key={key} HTTP/1.1",
            "q": f"program_id=1&api_key={key}",
            "f": "https://shop.example/?email=jane@corp.example",
            "s": 200,
            "{authorization}i": f"Bearer {key}",
            "{raw_uri}e": f"/x?token={key}",
        }
    )
    # %-formatting with the atoms is how gunicorn writes an access log line.
    line = '%(r)s %(q)s "%(f)s" %(s)s %({Authorization}i)s %({raw_uri}e)s %({missing}i)s' % atoms  # noqa: UP031
    assert key not in line and "jane@corp.example" not in line
    assert line == (
        "GET /api/v1/track/config?program_id=1&api_key=[redacted] HTTP/1.1 program_id=1&api_key=[redacted] "
        '"https://shop.example/?email=j***@corp.example" 200 [redacted] /x?token=[redacted] -'
    )


def test_gunicorn_error_log_records_are_redacted():
    key = generate_key(PROGRAM_KEY_PREFIX)
    record = logging.LogRecord(
        "gunicorn.error", logging.ERROR, __file__, 1, "Error handling request %s", (f"/p?k={key}",), None
    )
    RedactingFilter().filter(record)
    assert record.getMessage() == "Error handling request /p?k=aff_[redacted]"


# What a Celery worker does at start (Worker.setup_logging): Celery replaces the root logger's handlers with its own.
WORKER_LOGGING = """
import django, logging, sys
django.setup()
from celery.utils.log import get_task_logger
from config import celery_app
celery_app.log.setup(loglevel="INFO", logfile=None, redirect_stdouts=False, colorize=False)
logging.getLogger("svc.tasks").error("failed for %s", sys.argv[1])
get_task_logger("webhooks.tasks").error("task failed for %s", sys.argv[1])
"""


def test_a_celery_worker_log_line_is_redacted(tmp_path):
    key = generate_key(PROGRAM_KEY_PREFIX)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": f"sqlite:///{tmp_path}/db"}
    worker = subprocess.run(
        [sys.executable, "-c", WORKER_LOGGING, f"jane@corp.example {key}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    assert worker.returncode == 0, worker.stderr
    assert key not in worker.stderr and "jane@corp.example" not in worker.stderr
    assert worker.stderr.count("j***@corp.example aff_[redacted]") == 2, worker.stderr


def test_a_bare_token_without_a_digit_is_still_redacted():
    # About one random 43-character key in 1,400 has no digit.
    token = "usTTIBViP-BuMNNtJnKDuOueRJumEzcnfgM-ZndVKbY"
    assert redact_text(f"key {token} sent") == f"key {REDACTED} sent"
