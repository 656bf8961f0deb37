"""Every dashboard task, for the worker's autodiscovery."""

from .password_reset import owner_password_reset_email_task

__all__ = ["owner_password_reset_email_task"]
