"""A program's link aliases: query parameters its landing URLs may carry the referral code in, besides the spec's
`aff` and `via` (e.g. `fpr` or `ref`, so links shared on another platform keep working after a move). Off by
default (an empty list). `aff` wins, then `via`, then the aliases in the order listed."""

import base64
import binascii
import re
from typing import Any

from django.core.exceptions import ValidationError

# One leading underscore is allowed: FirstPromoter's links also come as ?_from=, ?_by= and ?_go=.
LINK_ALIAS_PATTERN = re.compile(r"(?:[a-z][a-z0-9_]{0,31}|_[a-z][a-z0-9_]{0,30})")
MAX_LINK_ALIASES = 5
# The spec's own parameters: always accepted, never an alias.
RESERVED_LINK_PARAMS = ("aff", "via")

ALIASES_NOT_A_LIST = "link_aliases must be a list of query parameter names"
ALIASES_TOO_MANY = f"link_aliases holds at most {MAX_LINK_ALIASES} names"
ALIAS_INVALID = (
    "{name!r} is not a usable link alias: a lowercase letter (after one optional underscore), then lowercase letters, "
    "digits or underscores, 32 characters at most"
)
ALIAS_RESERVED = "{name!r} is always accepted: aff and via are the spec's own parameters, not aliases"
ALIAS_DUPLICATE = "{name!r} is listed twice in link_aliases"


def link_aliases_problem(value: Any) -> str:
    """Why `value` cannot be a program's link_aliases ("" when it can)."""
    if not isinstance(value, list):
        return ALIASES_NOT_A_LIST
    if len(value) > MAX_LINK_ALIASES:
        return ALIASES_TOO_MANY
    seen: set[str] = set()
    for name in value:
        if not isinstance(name, str) or not LINK_ALIAS_PATTERN.fullmatch(name):
            return ALIAS_INVALID.format(name=name)
        if name in RESERVED_LINK_PARAMS:
            return ALIAS_RESERVED.format(name=name)
        if name in seen:
            return ALIAS_DUPLICATE.format(name=name)
        seen.add(name)
    return ""


def validate_link_aliases(value: Any) -> None:
    """The model field's validator (full_clean, the admin's form, the dashboard's)."""
    problem = link_aliases_problem(value)
    if problem:
        raise ValidationError(problem, code="invalid_link_aliases")


def link_aliases_from_text(text: str) -> list[str]:
    """The names typed in a form, separated by commas or spaces, lower-cased and in the order typed (checked
    afterwards by link_aliases_problem)."""
    return [name.lower() for name in re.split(r"[\s,]+", text.strip()) if name]


def link_aliases_of(value: Any) -> tuple[str, ...]:
    """The usable aliases of a stored value: a row changed behind the validators (raw SQL) yields none."""
    return tuple(value) if not link_aliases_problem(value) else ()


# Parameters whose value is the code encoded: PartnerStack's links carry the partner key in Base64, as
# ?ps_partner_key=amFuZQ (docs.partnerstack.com/docs/getting-integrated-with-s2s) or, the older form, ?gspk=amFuZQ.
BASE64_ALIASES = frozenset({"gspk", "ps_partner_key"})
_PRINTABLE_CODE = re.compile(r"[!-~]{1,255}")


def alias_code(name: str, value: str) -> str:
    """The referral code an alias' value carries: decoded for a Base64 parameter when it decodes to a printable
    code, else the value as it is."""
    if name not in BASE64_ALIASES:
        return value
    standard = value.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        decoded = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return value
    return decoded if _PRINTABLE_CODE.fullmatch(decoded) else value
