import pytest

pytestmark = pytest.mark.django_db


def test_the_openapi_description_covers_the_tracking_endpoints(client):
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"] == "3.1.0"
    for path in ("/api/v1/track/click", "/api/v1/track/lead", "/api/v1/track/sale", "/api/v1/track/refund"):
        assert "post" in schema["paths"][path], path
    sale = schema["paths"]["/api/v1/track/sale"]["post"]
    assert {"programKey": []} in sale["security"]
    assert {"200", "400", "401", "409", "422", "429", "500"} <= set(sale["responses"])
    sale_input = schema["components"]["schemas"]["SaleInput"]
    assert {"transaction_id", "amount_cents"} <= set(sale_input["required"])
    assert schema["components"]["securitySchemes"]["programKey"]["scheme"] == "bearer"
