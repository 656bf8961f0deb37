"""Every agent operation is in the OpenAPI description with the agentKey scheme, the scope its view requires and
the errors every agent route can answer."""

import re

import pytest

from agent_api.api.base import AgentApi
from agent_api.api.urls import urlpatterns

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "patch", "put", "delete")


def test_every_agent_operation_declares_its_scope_and_errors(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    assert "agentKey" in schema["components"]["securitySchemes"]
    operations = 0
    for pattern in urlpatterns:
        view = pattern.callback.view_class
        assert issubclass(view, AgentApi)
        path = "/" + re.sub(r"<\w+:(\w+)>", r"{\1}", str(pattern.pattern))
        for method in METHODS:
            if not hasattr(view, method):
                continue
            operation = schema["paths"][path][method]
            scope = view.required_scopes.get(method.upper())
            assert operation["security"] == [{"agentKey": [scope] if scope else []}], (method, path)
            assert {"401", "403", "429", "500"} <= set(operation["responses"]), (method, path)
            operations += 1
    assert operations >= 20
