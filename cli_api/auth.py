"""Login-token authentication for POST /api/v1/cli/init, GET /api/v1/cli/programs and POST /api/v1/cli/auth/logout.

The spec words the 401s differently per route, so the view names its messages; this class parses and looks up."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from core.api.auth import bearer_token
from core.errors import UnauthorizedError

from .models import CliToken
from .selectors import account_is_suspended, cli_token_get_by_raw
from .services import cli_token_touch, suspended_error


class LoginTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AbstractBaseUser | AnonymousUser, CliToken]:
        view = request.parser_context["view"]
        raw = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if not raw:
            raise UnauthorizedError(view.missing_token_message)
        token = cli_token_get_by_raw(raw)
        if token is None or not token.is_usable():
            raise UnauthorizedError(view.invalid_token_message)
        user = token.user
        if view.requires_account:
            if user is None:
                raise UnauthorizedError(view.user_missing_message)
            # Checked on every call, not only at sign-in: suspending an account stops its existing tokens too.
            if account_is_suspended(user):
                raise suspended_error()
        cli_token_touch(token=token)
        return (user or AnonymousUser(), token)

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
