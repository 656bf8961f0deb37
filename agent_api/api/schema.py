"""OpenAPI: agent-key authentication and the scope each agent operation needs."""

from typing import cast

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from .base import AgentApi


class AgentKeyScheme(OpenApiAuthenticationExtension):
    target_class = "agent_api.auth.AgentKeyAuthentication"
    name = "agentKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "Agent API key (`agt_…`), issued by an operator (admin or `manage.py agent_key issue`). Each "
                "operation names the scope it needs; `resource:write` includes `resource:read`."
            ),
        }

    def get_security_requirement(self, auto_schema: AutoSchema) -> dict[str, list[str]]:
        view = cast(AgentApi, auto_schema.view)
        scope = view.required_scopes.get(auto_schema.method.upper())
        return {self.name: [scope] if scope else []}
