"""What text PostgreSQL can store. Its text and jsonb types refuse NUL, and UTF-8 has no encoding for a lone
surrogate (JSON's "\\ud800"); either one reaches the database as a DataError, so input is checked for them first."""

import re
from typing import Any

# Every character PostgreSQL cannot store: NUL, and the surrogate range (only ever lone in a Python str).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> bool:
    """False for text holding a NUL character or a lone surrogate."""
    return _UNSTORABLE.search(text) is None


def storable_copy(value: Any) -> Any:
    """The same JSON value with every NUL and lone surrogate, in strings and keys, replaced by U+FFFD. For data
    we must keep but cannot refuse: a verified processor event that answered 500 would be redelivered forever."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {storable_copy(key): storable_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable_copy(item) for item in value]
    return value
