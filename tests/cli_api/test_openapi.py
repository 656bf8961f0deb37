import pytest

pytestmark = pytest.mark.django_db


def test_the_openapi_description_lists_the_cli_routes(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    for path, method in [
        ("/api/v1/cli/auth/start", "post"),
        ("/api/v1/cli/auth/callback", "post"),
        ("/api/v1/cli/auth/poll", "get"),
        ("/api/v1/cli/auth/logout", "post"),
        ("/api/v1/cli/init", "post"),
        ("/api/v1/cli/programs", "get"),
        ("/api/v1/cli/status", "get"),
        ("/api/v1/cli/test-event", "post"),
    ]:
        assert method in schema["paths"][path], path
    assert schema["paths"]["/api/v1/cli/init"]["post"]["security"] == [{"loginToken": []}]
    assert schema["paths"]["/api/v1/cli/status"]["get"]["security"] == [{"programKey": []}]
    assert schema["components"]["securitySchemes"]["loginToken"]["scheme"] == "bearer"
    assert {"201", "400", "401", "403", "429", "500"} <= set(schema["paths"]["/api/v1/cli/init"]["post"]["responses"])
