import contextvars
import logging

from .redaction import redact_line

current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


class RedactingFormatter(logging.Formatter):
    """The application's log lines with secrets and emails masked (core.redaction.redact_line), traceback
    included: Django names a refused request by its path, and an error's text may quote what a client sent."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_line(super().format(record))
