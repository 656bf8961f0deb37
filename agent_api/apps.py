from django.apps import AppConfig


class AgentApiConfig(AppConfig):
    name = "agent_api"
    verbose_name = "Agent API"

    def ready(self) -> None:
        from agent_api.api import schema  # noqa: F401  registers the OpenAPI description of agent keys
