"""Logs: the request log of the program as a page, with the API's filters as a GET form and older pages by a
cursor; keys show as their mask only."""

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from programs.models import ApiCall
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def url(program) -> str:
    return f"/programs/{program.pk}/logs"


def test_a_signed_out_visitor_goes_to_sign_in(client, program):
    assert client.get(url(program))["Location"] == f"/accounts/login/?next={url(program)}"


def test_an_outsider_is_refused(outsider_client, program):
    assert outsider_client.get(url(program)).status_code == 403


def test_it_shows_a_real_call_with_its_error_and_the_key_mask(member_client, program):
    sent = APIClient().post(
        "/api/v1/track/sale",
        {"transaction_id": "txn_page", "amount_cents": 4900, "currency": "USD", "customer_key": "ghost"},
        format="json",
        **bearer(program.raw_api_key),
    )
    assert sent.status_code >= 400
    response = member_client.get(url(program))
    assert response.status_code == 200
    body = response.content.decode()
    assert "POST track-sale" in body and str(sent.status_code) in body
    assert sent.json()["error"]["message"] in body
    assert program.api_token_masked in body and program.raw_api_key not in body
    assert "transaction_id=txn_page" in body
    assert f"/programs/{program.pk}/explain?transaction_id=txn_page" in body
    assert f'href="/programs/{program.pk}/logs" aria-current="page">Logs</a>' in body


def test_the_filters_narrow_the_rows(member_client, program):
    ApiCall.objects.create(program=program, created_at=T0, method="POST", route="track-click", status=200)
    ApiCall.objects.create(
        program=program, created_at=T0, method="POST", route="track-sale", status=400, error_code="no_attribution"
    )
    body = member_client.get(url(program), {"status": "4xx"}).content.decode()
    assert "track-sale" in body and "track-click" not in body
    body = member_client.get(url(program), {"route": "track-click", "status": ""}).content.decode()
    assert "track-click" in body and "POST track-sale" not in body
    assert "No calls match these filters" in member_client.get(url(program), {"error_code": "nope"}).content.decode()


def test_a_bad_filter_says_why(member_client, program):
    response = member_client.get(url(program), {"status": "4x"})
    assert response.status_code == 400
    assert "status must be a class such as 4xx or a status code such as 404" in response.content.decode()


def test_older_pages_follow_the_cursor(member_client, program, monkeypatch):
    monkeypatch.setattr("dashboard.views.LOGS_PER_PAGE", 2)
    rows = [
        ApiCall.objects.create(
            program=program, created_at=T0 + timedelta(minutes=i), method="GET", route=f"route-{i}", status=200
        )
        for i in range(3)
    ]
    first = member_client.get(url(program), {"status": "2xx"}).content.decode()
    assert "route-2" in first and "route-1" in first and "route-0" not in first
    assert f"?status=2xx&amp;cursor={rows[1].pk}" in first
    older = member_client.get(url(program), {"status": "2xx", "cursor": rows[1].pk}).content.decode()
    assert "route-0" in older and "route-1" not in older and "← Newest" in older
