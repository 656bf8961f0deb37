"""Generic pieces of authentication: reading a Bearer header, and the dashboard's session authentication.
Program-key authentication lives with programs (programs.api.auth)."""

from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request


def bearer_token(header: str) -> str | None:
    """The token of a Bearer header (possibly empty), or None when the header is not Bearer."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()


class DashboardSessionAuthentication(SessionAuthentication):
    """Signed-in dashboard users only. Program keys are never looked at on these routes."""

    def authenticate_header(self, request: Request) -> str:
        return 'Session realm="dashboard"'
