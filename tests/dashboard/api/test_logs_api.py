"""GET /api/tracking/logs/:programId: the program's request log for a signed-in member (tracking:list), filtered
by status (a class or a code), route, error code and time, newest first with a cursor."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from core import messages
from programs.models import ApiCall, Role
from tests.factories import ProgramFactory, UserFactory
from tests.helpers import bad_request, bearer, platform_error

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def logs(client, program_id, **params):
    return client.get(f"/api/tracking/logs/{program_id}", params)


def logged(program, *, status=200, route="track-sale", error_code="", at=T0, **fields):
    return ApiCall.objects.create(
        program=program, created_at=at, method="POST", route=route, status=status, error_code=error_code, **fields
    )


class TestAccess:
    def test_signed_out_is_401(self, api_client, program):
        response = logs(api_client, program.pk)
        assert response.status_code == 401
        assert response.json() == platform_error(401, "UnauthorizedError", messages.AUTHENTICATION_REQUIRED)

    def test_a_program_key_is_not_a_session(self, api_client, program):
        response = api_client.get(f"/api/tracking/logs/{program.pk}", **bearer(program.raw_api_key))
        assert response.status_code == 401

    def test_no_membership_is_403(self, api_client, program):
        api_client.force_login(UserFactory())
        response = logs(api_client, program.pk)
        assert response.status_code == 403
        assert response.json() == platform_error(403, "ForbiddenError", messages.PERMISSION_DENIED)

    @pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN, Role.MEMBER])
    def test_every_role_that_lists_tracking_may_read_it(self, sign_in, program, role):
        assert logs(sign_in(program, role), program.pk).status_code == 200

    def test_an_unknown_program_is_404(self, owner, program):
        response = logs(owner, program.pk + 1000)
        assert response.status_code == 404
        assert response.json() == platform_error(404, "NotFoundError", messages.PROGRAM_NOT_FOUND)


def test_a_real_call_is_listed_with_its_error_and_the_key_mask_only(owner, program):
    integrator = APIClient()
    sent = integrator.post(
        "/api/v1/track/sale",
        {
            "transaction_id": "txn_9",
            "amount_cents": 4900,
            "currency": "USD",
            "customer_key": "ghost",
            "email": "ada@x.io",
        },
        format="json",
        **bearer(program.raw_api_key),
    )
    assert sent.status_code >= 400
    response = logs(owner, program.pk)
    assert response.status_code == 200
    [row] = response.json()["data"]
    assert row["route"] == "track-sale" and row["method"] == "POST" and row["status"] == sent.status_code
    assert row["error_code"] == sent.json()["error"].get("code", "")
    assert row["message"] == sent.json()["error"]["message"]
    assert row["key_mode"] == "live" and row["key_masked"] == program.api_token_masked
    assert row["excerpt"]["transaction_id"] == "txn_9" and row["excerpt"]["email"] == "a***@x.io"
    assert program.raw_api_key not in response.content.decode()
    assert response.json()["meta"] == {"next_cursor": None}


def test_another_programs_calls_are_not_listed(owner, program):
    logged(ProgramFactory())
    assert logs(owner, program.pk).json()["data"] == []


class TestFilters:
    @pytest.fixture
    def rows(self, program):
        return {
            "ok": logged(program, status=200, route="track-click", at=T0),
            "refused": logged(program, status=400, error_code="no_attribution", at=T0 + timedelta(hours=1)),
            "conflict": logged(program, status=409, error_code="duplicate_transaction", at=T0 + timedelta(days=1)),
            "failed": logged(program, status=500, route="track-lead", at=T0 + timedelta(days=2)),
        }

    def ids(self, response) -> list[int]:
        assert response.status_code == 200, response.json()
        return [row["id"] for row in response.json()["data"]]

    @pytest.mark.parametrize(
        ("params", "expected"),
        [
            ({}, ["failed", "conflict", "refused", "ok"]),
            ({"status": "4xx"}, ["conflict", "refused"]),
            ({"status": "2xx"}, ["ok"]),
            ({"status": "5xx"}, ["failed"]),
            ({"status": "409"}, ["conflict"]),
            ({"route": "track-sale"}, ["conflict", "refused"]),
            ({"error_code": "no_attribution"}, ["refused"]),
            ({"since": "2026-03-02"}, ["failed", "conflict"]),
            ({"until": "2026-03-01"}, ["refused", "ok"]),
            ({"since": "2026-03-01T12:30:00Z", "until": "2026-03-02T12:00:00Z"}, ["conflict", "refused"]),
            ({"status": "", "route": ""}, ["failed", "conflict", "refused", "ok"]),
        ],
    )
    def test_filters(self, owner, program, rows, params, expected):
        assert self.ids(logs(owner, program.pk, **params)) == [rows[name].pk for name in expected]

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"status": "4x"}, "status must be a class such as 4xx or a status code such as 404"),
            ({"status": "600"}, "status must be a class such as 4xx or a status code such as 404"),
            ({"since": "yesterday"}, "since must be an ISO 8601 date or date-time"),
            ({"since": "2026-03-02", "until": "2026-03-01"}, "since must not be after until"),
            ({"cursor": "0"}, "cursor must be a positive integer"),
            ({"cursor": "9" * 30}, "cursor must be a positive integer"),
            ({"limit": "101"}, "limit must be at most 100"),
            ({"cursor": "5", "after": "1"}, "Give cursor or after, not both"),
        ],
    )
    def test_bad_filters_are_400(self, owner, program, params, message):
        response = logs(owner, program.pk, **params)
        assert response.status_code == 400
        assert response.json() == bad_request(message)


class TestPagination:
    def test_pages_newest_first_by_cursor_to_the_end(self, owner, program):
        rows = [logged(program, at=T0 + timedelta(minutes=i)) for i in range(5)]
        newest_first = [row.pk for row in reversed(rows)]
        seen: list[int] = []
        cursor = None
        for _ in range(3):
            body = logs(owner, program.pk, limit=2, **({"cursor": cursor} if cursor else {})).json()
            seen += [row["id"] for row in body["data"]]
            cursor = body["meta"]["next_cursor"]
            if cursor is None:
                break
        assert seen == newest_first and cursor is None

    def test_after_lists_the_newer_rows_oldest_first(self, owner, program):
        rows = [logged(program, at=T0 + timedelta(minutes=i)) for i in range(4)]
        body = logs(owner, program.pk, after=rows[1].pk).json()
        assert [row["id"] for row in body["data"]] == [rows[2].pk, rows[3].pk]

    def test_a_page_reads_a_constant_number_of_queries(self, owner, program):
        def count(rows):
            ApiCall.objects.filter(program=program).delete()
            for i in range(rows):
                logged(program, at=T0 + timedelta(seconds=i))
            with CaptureQueriesContext(connection) as queries:
                assert logs(owner, program.pk, limit=50).status_code == 200
            return len(queries)

        assert count(2) == count(40)
