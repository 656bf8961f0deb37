"""Every portal task, for the worker's autodiscovery. The commission email and the password-reset email are each
declared beside their sender, because the function that queues it sits in the same module."""

from .account import password_reset_email_task
from .emails import commission_email_task

__all__ = ["commission_email_task", "password_reset_email_task"]
