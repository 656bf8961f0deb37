"""gunicorn's logger with secrets kept out (config/gunicorn.conf.py `logger_class`).

The access log writes the request line, and a client may send its key in the query (`?api_key=…`) or in a
Referer; gunicorn's error log names a failed request by its URI. Each atom the access log format actually uses
(the default's request line, referer and user agent, or any header or environ value a custom format names) is
redacted when it is read, so an atom the format leaves out costs nothing; headers that carry credentials are never
written. Error log records are redacted whole."""

import logging
from typing import Any

from gunicorn.glogging import Logger, SafeAtoms

from .redaction import REDACTED, redact_line

# Header and environ atoms (`{authorization}i`, `{http_cookie}e`) never written, whatever the format asks for.
CREDENTIAL_ATOMS = frozenset(
    {
        "{authorization}i",
        "{proxy-authorization}i",
        "{cookie}i",
        "{x-api-key}i",
        "{set-cookie}o",
        "{http_authorization}e",
        "{http_proxy_authorization}e",
        "{http_cookie}e",
        "{http_x_api_key}e",
    }
)


class RedactedAtoms(SafeAtoms):
    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if key.lower() in CREDENTIAL_ATOMS and value != "-":
            return REDACTED
        return redact_line(value) if isinstance(value, str) else value


class RedactingFilter(logging.Filter):
    """Folds a record's arguments into its message and redacts it (and a traceback's text, once formatted)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_line(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_line(record.exc_text)
        return True


class RedactingLogger(Logger):
    atoms_wrapper_class = RedactedAtoms

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        if not any(isinstance(existing, RedactingFilter) for existing in self.error_log.filters):
            self.error_log.addFilter(RedactingFilter())
