"""`svc`: the command-line helper of the svc tracking service (login, init, programs, status, test-event)."""

__version__ = "0.1.0"
