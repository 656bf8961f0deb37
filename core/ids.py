"""Ids and other whole numbers as callers write them, parsed in one place.

Python's int() and str.isdigit() accept digits of every script: int("١") is 1, and "²".isdigit() is True while
int("²") raises. So an id, a page number or a count from a request goes through here: an integer, or a string of
ASCII digits (surrounding spaces allowed), within a bigint column's range. Anything else is None, and the caller
answers its own error ("Unknown program_id", a 404, page 1)."""

import re

MAX_BIGINT = 2**63 - 1
# A hundred digits is far past any column; the cap keeps int() away from its 4,300-digit error.
_ASCII_INTEGER = re.compile(r"-?[0-9]{1,100}")


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
