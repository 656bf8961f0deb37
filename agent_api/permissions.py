"""Which scope an agent route needs: the view names it per method in `required_scopes`."""

from typing import TYPE_CHECKING, cast

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from core.errors import ForbiddenError
from programs.models import AgentKey

from . import messages

if TYPE_CHECKING:
    from .api.base import AgentApi


def scope_require(key: AgentKey, scope: str) -> None:
    if not key.allows(scope):
        raise ForbiddenError(
            messages.SCOPE_MISSING.format(scope=scope), code=messages.CODE_SCOPE_MISSING, details={"scope": scope}
        )


class HasAgentScope(BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        scope = cast("AgentApi", view).required_scopes.get("GET" if request.method == "HEAD" else request.method or "")
        if scope is not None:
            scope_require(cast(AgentKey, request.auth), scope)
        return True
