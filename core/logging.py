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


class RedactedFormatter(logging.Formatter):
    """Another formatter's lines, redacted: for handlers this project does not configure (the Celery worker's)."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact_line(self.inner.format(record))


def handlers_redact(logger: logging.Logger, **_: object) -> None:
    """Celery's after_setup_logger and after_setup_task_logger receiver (config/celery.py): a worker replaces the
    root logger's handlers with its own, which would write past RedactingFormatter."""
    for handler in logger.handlers:
        if not isinstance(handler.formatter, RedactingFormatter | RedactedFormatter):
            handler.setFormatter(RedactedFormatter(handler.formatter))
