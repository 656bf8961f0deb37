"""What never reaches a log: secrets and contact data are masked in any text written to the request log
(programs.calllog), the application log (core.logging.RedactingFormatter) and gunicorn's access and error logs
(core.gunicorn_logging).

- An email address (also written `%40`): its first character and its domain, `jane@corp.example` → `j***@corp.example`.
- A secret by its shape: program keys (`aff_…`, `aff_test_…`), agent keys (`agt_…`), CLI tokens (`svcl_…`),
  webhook signing secrets (`whsec_…`), Stripe secret and restricted keys (`sk_live_…`, `rk_test_…`) become their
  prefix and `[redacted]`; a JSON Web Token and a bare 43-character random token (a program key from before the
  `aff_` prefix, a CLI login state) become `[redacted]`.
- A password-reset link's token becomes `[redacted]`: an unused link read in a log resets the account. The partner
  portal's (`/portal/password-reset/1-dixhh1-83179e17…`: the account's id and the timestamp in base 36, then 32 hex
  digits) and Django's own for owners (`/accounts/reset/MQ/dixhh1-83179e17…/`: the same without the id).
- A card number: 13 to 19 digits, in groups separated by single spaces or dashes, that pass the Luhn check keep
  their last four digits, `4242 4242 4242 4242` → `**** **** **** 4242`.
- In a URL or query string (the log line variants only): the value of a parameter named like a secret
  (`api_key`, `token`, `secret`, `password`, `signature`, `auth…`, `code`, `state`) becomes `[redacted]`.

core imports no feature app, so the prefixes are written here; tests/core/test_redaction.py makes each app's own
generator's output and checks it is redacted. Runs on every logged call (about 6 µs a request-log row): the
patterns are compiled once, and each is only run on text that can hold its shape (an `_`, `eyJ`, 43 characters,
a `-` in 34, an `@` or `%40`, a run of 13 digits, spaces or dashes)."""

import re
from typing import Any
from urllib.parse import unquote

REDACTED = "[redacted]"

# Longer prefixes first: `aff_test_` is kept as such, so a reader still sees which mode the key was.
SECRET_PREFIXES = ("aff_test_", "aff_", "agt_", "svcl_", "sk_live_", "sk_test_", "rk_live_", "rk_test_")
WEBHOOK_SECRET_PREFIX = "whsec_"
# How much of a prefixed secret must follow its prefix to count as one: generated keys carry 43 characters, so a
# fragment this long is still most of a key; shorter words such as `aff_ids` stay readable.
SECRET_BODY_MIN = 16
BARE_TOKEN_LENGTH = 43  # secrets.token_urlsafe(32)

_NOT_TOKEN_BEFORE = r"(?<![A-Za-z0-9])"
_PREFIXED = re.compile(
    _NOT_TOKEN_BEFORE
    + "(?P<prefix>"
    + "|".join(re.escape(prefix) for prefix in SECRET_PREFIXES)
    + rf")[A-Za-z0-9_-]{{{SECRET_BODY_MIN},}}"
    # Standard base64, its `+`, `/` and `=` perhaps percent-encoded in a URL.
    + rf"|{_NOT_TOKEN_BEFORE}(?P<whsec>{WEBHOOK_SECRET_PREFIX})(?:[A-Za-z0-9+/]|%2[BbFf]){{{SECRET_BODY_MIN},}}"
    + r"(?:=|%3[Dd]){0,2}"
)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BARE_TOKEN = re.compile(rf"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{{{BARE_TOKEN_LENGTH}}}(?![A-Za-z0-9_-])")
# Django's PasswordResetTokenGenerator: `<timestamp>-<hash>`; portal.account.reset_link_token puts the account's id
# before it.
_RESET_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])(?:[0-9a-z]{1,13}-)?[0-9a-z]{1,13}-[0-9a-f]{32}(?![A-Za-z0-9_-])")
RESET_TOKEN_MIN_LENGTH = 34
# The local part is kept to the characters addresses really use, so a URL's `?email=` or `/` never joins it.
_EMAIL = re.compile(r"(?P<local>[\w.+-]+)(?:@|%40)(?P<domain>[\w-]+(?:\.[\w-]+)+)")
_EMAIL_HINT = re.compile(r"@|%40")
# A run of digit groups joined by single spaces or dashes, not glued to a word (`txn_1748779200000` is an id).
_DIGIT_RUN = re.compile(r"(?<!\w)\d+(?:[ -]\d+)*(?!\w)")
# Cheap first test: any card's run is 13 or more characters of digits, spaces and dashes in a row.
_CARD_HINT = re.compile(r"[\d -]{13,}")
CARD_DIGITS_MIN, CARD_DIGITS_MAX, CARD_DIGITS_SHOWN = 13, 19, 4

_QUERY_PARAM = re.compile(r"(?P<lead>^|[?&;])(?P<name>[^=&;?#\s\"]+)=(?P<value>[^&;#\s\"]*)")
_SECRET_PARAM_PART = re.compile(r"key|token|secret|passw|pwd|signature|credential|auth|jwt")
_SECRET_PARAM_NAMES = frozenset({"code", "state", "sig"})


def email_mask(value: str) -> str:
    """`ada@example.com` → `a***@example.com`: enough to recognise, not enough to contact."""
    local, at, domain = value.partition("@")
    return f"{local[:1]}***@{domain}" if at else "***"


def _email_masked(match: re.Match[str]) -> str:
    return f"{match['local'][:1]}***@{match['domain']}"


def _prefixed_redacted(match: re.Match[str]) -> str:
    return (match["prefix"] or match["whsec"]) + REDACTED


def _bare_token_redacted(match: re.Match[str]) -> str:
    token = match.group()
    # Random text mixes cases (a 43-character token lacks one case about once in 10^9, but a digit about once in
    # 1,400); a slug or an id of this length rarely mixes them.
    mixed = any(c.isupper() for c in token) and any(c.islower() for c in token)
    return REDACTED if mixed else token


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        number = ord(char) - 48
        if position % 2:
            number = number * 2 - 9 if number > 4 else number * 2
        total += number
    return total % 10 == 0


def _card_span(groups: list[str]) -> tuple[int, int] | None:
    """The first run of whole groups (start, end) holding 13-19 digits that pass the Luhn check: a card number
    followed by an expiry or a code in the same run is found all the same."""
    for start in range(len(groups)):
        digits = ""
        for end in range(start, len(groups)):
            digits += groups[end]
            if len(digits) > CARD_DIGITS_MAX:
                break
            if len(digits) >= CARD_DIGITS_MIN and luhn_valid(digits):
                return start, end + 1
    return None


def _card_masked(match: re.Match[str]) -> str:
    run = match.group()
    parts = re.split(r"([ -])", run)
    groups = parts[::2]
    span = _card_span(groups)
    if span is None:
        return run
    start, end = span
    shown = CARD_DIGITS_SHOWN
    for index in range(end - 1, start - 1, -1):
        group = groups[index]
        keep = min(shown, len(group))
        groups[index] = "*" * (len(group) - keep) + group[len(group) - keep :]
        shown -= keep
    parts[::2] = groups
    return "".join(parts)


def redact_text(text: str) -> str:
    """`text` with every email masked and every secret- or card-shaped run replaced (see the module's list)."""
    if "_" in text:
        text = _PREFIXED.sub(_prefixed_redacted, text)
    if "eyJ" in text:
        text = _JWT.sub(REDACTED, text)
    if len(text) >= BARE_TOKEN_LENGTH:
        text = _BARE_TOKEN.sub(_bare_token_redacted, text)
    if len(text) >= RESET_TOKEN_MIN_LENGTH and "-" in text:
        text = _RESET_TOKEN.sub(REDACTED, text)
    if _EMAIL_HINT.search(text):
        text = _EMAIL.sub(_email_masked, text)
    if _CARD_HINT.search(text):
        text = _DIGIT_RUN.sub(_card_masked, text)
    return text


def redact(value: Any) -> Any:
    """A JSON value with redact_text applied to every string in it, dict keys included, and an integer that is a
    card number masked (as text). Anything else is returned as it is."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        digits = str(abs(value))
        if CARD_DIGITS_MIN <= len(digits) <= CARD_DIGITS_MAX and luhn_valid(digits):
            return redact_text(digits)
        return value
    if isinstance(value, dict):
        return {redact(key): redact(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def secret_param(name: str) -> bool:
    name = unquote(name).lower()
    return name in _SECRET_PARAM_NAMES or _SECRET_PARAM_PART.search(name) is not None


def _param_redacted(match: re.Match[str]) -> str:
    if not match["value"] or not secret_param(match["name"]):
        return match.group()
    return f"{match['lead']}{match['name']}={REDACTED}"


def redact_line(text: str) -> str:
    """A log line: the values of secret-named query parameters in any URL it holds (or in a bare query string,
    such as `api_key=…&page=2`), then redact_text."""
    if "=" in text:
        text = _QUERY_PARAM.sub(_param_redacted, text)
    return redact_text(text)
