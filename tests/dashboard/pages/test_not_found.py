"""The same 404 whatever DEBUG is (core.not_found): under /api/ the JSON envelope, elsewhere the dashboard's own
page. With DEBUG on Django would answer its debug page listing every URL pattern (`make run` sets DEBUG)."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

NOT_FOUND_BODY = {
    "data": None,
    "error": {"status": 404, "name": "NotFoundError", "message": "Not found", "details": {}},
}


@pytest.fixture(params=[True, False], ids=["debug", "no-debug"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def assert_dashboard_404(response) -> None:
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert 'id="not-found"' in body and "Page not found" in body
    assert "URLconf" not in body and "Raised by" not in body  # no trace of Django's debug page


@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/api/nope"),
        ("get", "/api/v1/track/nope"),
        ("post", "/api/v1/track/nope"),
        ("get", "/api/tracking/nope"),
        ("delete", "/api/v1/cli/nope/"),
    ],
)
def test_an_unknown_api_route_answers_the_json_envelope(debug, method, path):
    response = getattr(Client(), method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == NOT_FOUND_BODY
    assert response["X-Request-ID"]


def test_a_known_api_route_keeps_its_own_404(debug, owner_client, program):
    response = owner_client.get(f"/api/tracking/status/{program.pk + 1000}")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Program not found"


@pytest.mark.parametrize("path", ["/no-such-page", "/programs/1/nope", "/static/css/none.css"])
def test_an_unknown_page_answers_the_dashboards_404_page(debug, owner_client, path):
    response = owner_client.get(path)
    assert_dashboard_404(response)
    assert 'href="/"' in response.content.decode()  # back to the programs list, signed in


def test_signed_out_the_404_page_offers_the_sign_in(debug):
    response = Client().get("/no-such-page")
    assert_dashboard_404(response)
    assert 'href="/accounts/login/"' in response.content.decode()


def test_a_page_for_an_unknown_program_answers_the_dashboards_404_page(debug, owner_client, program):
    assert_dashboard_404(owner_client.get(f"/programs/{program.pk + 1000}/commissions"))


def test_a_missing_slash_is_still_redirected(debug, owner_client, program):
    response = owner_client.get(f"/programs/{program.pk}")
    assert response.status_code == 301
    assert response["Location"] == f"/programs/{program.pk}/"


def test_a_page_that_explains_its_own_404_keeps_it(debug, owner_client, program):
    response = owner_client.get(f"/programs/{program.pk}/explain", {"transaction_id": "txn-none"})
    assert response.status_code == 404
    assert 'id="not-found"' not in response.content.decode()
