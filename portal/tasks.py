"""Every portal task, for the worker's autodiscovery. The commission email is declared beside its sender, because
the function that queues it sits in the same module."""

from .emails import commission_email_task

__all__ = ["commission_email_task"]
