"""What text PostgreSQL can store. Its text and jsonb types refuse NUL, and UTF-8 has no encoding for a lone
surrogate (JSON's "\\ud800"); either one reaches the database as a DataError, so input is checked for them first."""


def storable_text(text: str) -> bool:
    """False for text holding a NUL character or a lone surrogate."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
