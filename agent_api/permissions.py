"""Which scope an agent route needs: the view names it per method in `required_scopes`."""

from rest_framework.permissions import BasePermission

from core.errors import ForbiddenError
from programs.models import AgentKey

from . import messages


def scope_require(key: AgentKey, scope: str) -> None:
    if not key.allows(scope):
        raise ForbiddenError(
            messages.SCOPE_MISSING.format(scope=scope), code=messages.CODE_SCOPE_MISSING, details={"scope": scope}
        )


class HasAgentScope(BasePermission):
    def has_permission(self, request, view) -> bool:
        scope = view.required_scopes.get("GET" if request.method == "HEAD" else request.method)
        if scope is not None:
            scope_require(request.auth, scope)
        return True
