import pytest

pytestmark = pytest.mark.django_db

ROUTES = {
    "/api/tracking/status/{program_id}": "get",
    "/api/tracking/events/{program_id}": "get",
    "/api/tracking/performance/{program_id}": "get",
    "/api/tracking/readiness/{program_id}": "get",
    "/api/tracking/run-verification/{program_id}": "post",
    "/api/tracking/test": "post",
    "/api/tracking/check-test-events": "post",
    "/api/v1/programs/{program_id}/settings": "patch",
    "/api/v1/programs/me/readiness": "get",
    "/api/v1/programs/me/analytics/sources": "get",
}


def test_the_openapi_description_covers_the_dashboard_and_report_routes(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    for path, method in ROUTES.items():
        assert method in schema["paths"][path], path
    for path in [path for path in ROUTES if path.startswith("/api/tracking/")]:
        operation = schema["paths"][path][ROUTES[path]]
        assert operation["security"] == [{"dashboardSession": []}], path
        assert {"200", "401", "403", "404"} <= set(operation["responses"]), path
    events = schema["paths"]["/api/tracking/events/{program_id}"]["get"]
    assert {"page", "pageSize", "eventType", "dateFrom", "dateTo", "program_id"} <= {
        p["name"] for p in events["parameters"]
    }
    readiness = schema["paths"]["/api/v1/programs/me/readiness"]["get"]
    assert readiness["security"] == [{"programKey": []}]
    assert {"200", "401", "429", "500"} <= set(readiness["responses"])
    settings = schema["paths"]["/api/v1/programs/{program_id}/settings"]
    assert {"get", "patch"} <= set(settings)
    assert "hold_days" in schema["components"]["schemas"]["PatchedSettingsPatch"]["properties"]
