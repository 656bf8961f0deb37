"""Ids and other whole numbers as callers write them, parsed in one place.

Python's int() and str.isdigit() accept digits of every script: int("١") is 1, and "²".isdigit() is True while
int("²") raises. So an id, a page number or a count from a request goes through here: an integer, or a string of
ASCII digits (surrounding spaces allowed), within a bigint column's range. Anything else is None, and the caller
answers its own error ("Unknown program_id", a 404, page 1).

An id in a URL path is stricter (path_id_text, the `<id:...>` converter): ASCII digits only, nothing around them,
so `/programs/%201` (" 1") names no program where the body's " 1" still would."""

import re

MAX_BIGINT = 2**63 - 1
# A hundred digits is far past any column; the cap keeps int() away from its 4,300-digit error.
_ASCII_INTEGER = re.compile(r"-?[0-9]{1,100}")
_PATH_ID = re.compile(r"[0-9]{1,100}")


def integer_parse(value: object, *, minimum: int | None = None, maximum: int | None = None) -> int | None:
    """An int (not a bool) or an ASCII decimal string, when within [minimum, maximum]; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _ASCII_INTEGER.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        return None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        return None
    return number


def id_parse(value: object) -> int | None:
    """A database id: a positive integer or a string of ASCII digits that fits a bigint."""
    return integer_parse(value, minimum=1, maximum=MAX_BIGINT)


def page_number_parse(value: object) -> int:
    """A page number from a query string: 1 unless it is a positive whole number."""
    return id_parse(value) or 1


def path_id_text(value: str) -> str:
    """A path segment that names an object by id: the segment itself when it is ASCII digits alone (leading
    zeros read as Django's `<int:>` reads them) naming a positive bigint, else "" (which names nothing). No sign,
    space, underscore or other script's digit: int() accepts " 1", "+1", "1_0" and "١"."""
    if not _PATH_ID.fullmatch(value) or not 1 <= int(value) <= MAX_BIGINT:
        return ""
    return value


class PathIdConverter:
    """`<id:program_id>`: matches any one segment, so a malformed id still reaches its view, which answers its own
    404 in its own envelope and words (`Program not found`, the agent API's `not_found`), not Django's page. The
    view gets the segment as text, or "" when it is malformed (path_id_text)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return path_id_text(value)

    def to_url(self, value: object) -> str:
        return str(value)
