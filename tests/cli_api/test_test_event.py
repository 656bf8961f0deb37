"""POST /api/v1/cli/test-event: the synthetic chain, its fixture, and the cap of 10 runs per program per hour."""

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone

from cli_api.models import CliTestFixture, CliTestRun
from programs.models import Partner, ProgramKey, ReferralLink
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.helpers import platform_error
from tracking.models import ClickEvent, LeadEvent, SaleEvent

from .conftest import TEST_EVENT, bearer, error_of

pytestmark = pytest.mark.django_db


def run(api_client, key: str, **extra):
    return api_client.post(TEST_EVENT, **bearer(key), **extra)


def test_it_runs_the_chain_on_a_fresh_program_with_a_fixture_of_its_own(api_client, program):
    response = run(api_client, program.raw_api_key)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["success"] is True and data["program_id"] == program.pk
    assert [(step["step"], step["ok"]) for step in data["steps"]] == [("click", True), ("lead", True), ("sale", True)]
    assert data["limit"] == {"runs_per_hour": 10, "runs_remaining": 9}
    assert {"run_id", "click_id", "customer_key", "duration_ms"} <= set(data)
    assert response.has_header("X-Request-ID")
    # Everything it recorded is test data.
    assert ClickEvent.objects.get().is_test and LeadEvent.objects.get().is_test and SaleEvent.objects.get().is_test
    fixture = CliTestFixture.objects.get()
    assert fixture.program == program and fixture.link.is_active and fixture.link.partner == fixture.partner
    assert fixture.partner.name == "svc verification" and fixture.partner.workspace == program.workspace
    recorded = CliTestRun.objects.get()
    assert (recorded.program, recorded.run_id, recorded.success) == (program, data["run_id"], True)


def test_the_fixture_is_reused_not_multiplied(api_client, program):
    run(api_client, program.raw_api_key)
    assert run(api_client, program.raw_api_key).json()["data"]["success"] is True
    assert (CliTestFixture.objects.count(), Partner.objects.count(), ReferralLink.objects.count()) == (1, 1, 1)


def test_a_program_with_a_link_of_its_own_gets_no_fixture(api_client, program):
    link = ReferralLinkFactory(program=program)
    data = run(api_client, program.raw_api_key).json()["data"]
    assert data["success"] is True
    assert ClickEvent.objects.get().link == link
    assert not CliTestFixture.objects.exists()


def test_a_fixture_turned_off_or_deleted_is_refreshed(api_client, program):
    run(api_client, program.raw_api_key)
    fixture = CliTestFixture.objects.get()
    ReferralLink.objects.filter(pk=fixture.link_id).update(is_active=False)
    assert run(api_client, program.raw_api_key).json()["data"]["success"] is True
    fixture.refresh_from_db()
    assert fixture.link.is_active

    fixture.link.delete()
    assert run(api_client, program.raw_api_key).json()["data"]["success"] is True
    fixture.refresh_from_db()
    assert fixture.link is not None and fixture.link.is_active and Partner.objects.count() == 1


def test_the_test_key_runs_it_too(api_client, program):
    assert run(api_client, program.raw_test_api_key).json()["data"]["success"] is True


def test_a_failing_step_is_reported_in_a_200(api_client, program):
    ProgramKey.objects.filter(program=program, mode="test").delete()
    response = run(api_client, program.raw_api_key)
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["success"] is False
    assert data["steps"] == [{"step": "click", "ok": False, "message": "The program has no test key"}]
    assert CliTestRun.objects.get().success is False


def test_the_eleventh_run_within_an_hour_is_capped(api_client, program):
    start = timezone.now()
    for minute in range(10):
        with time_machine.travel(start + timedelta(minutes=minute * 3), tick=False):
            response = run(api_client, program.raw_api_key)
            assert response.status_code == 200
            assert response.json()["data"]["limit"]["runs_remaining"] == 9 - minute
    events = (ClickEvent.objects.count(), LeadEvent.objects.count(), SaleEvent.objects.count())

    # 40 minutes after the first run: it leaves the window in 20 minutes.
    with time_machine.travel(start + timedelta(minutes=40), tick=False):
        response = run(api_client, program.raw_api_key)

    assert response.status_code == 429
    assert response.json() == {
        "error": {
            "code": "rate_limited",
            "message": "Test event limit reached: 10 runs per program per hour. Retry after 1200 seconds.",
            "status": 429,
            "retry_after_seconds": 1200,
        }
    }
    assert response["Retry-After"] == "1200"
    assert response.has_header("X-Request-ID")
    assert CliTestRun.objects.count() == 10
    assert (ClickEvent.objects.count(), LeadEvent.objects.count(), SaleEvent.objects.count()) == events

    # When the oldest run leaves the window, one more is allowed, and the next waits for the second oldest.
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        assert run(api_client, program.raw_api_key).status_code == 200
        capped = run(api_client, program.raw_api_key)
    assert capped.status_code == 429
    assert capped.json()["error"]["retry_after_seconds"] == 180


def test_the_cap_is_per_program_and_shared_by_its_keys(api_client, program):
    now = timezone.now()
    CliTestRun.objects.bulk_create(
        [CliTestRun(program=program, created_at=now - timedelta(minutes=59, seconds=30))]
        + [CliTestRun(program=program, created_at=now - timedelta(minutes=5)) for _ in range(9)]
    )
    with time_machine.travel(now, tick=False):
        capped = run(api_client, program.raw_test_api_key)
        assert capped.status_code == 429
        assert capped.json()["error"]["retry_after_seconds"] == 30
        assert run(api_client, ProgramFactory().raw_api_key).status_code == 200


def test_runs_older_than_an_hour_do_not_count(api_client, program):
    now = timezone.now()
    CliTestRun.objects.bulk_create(
        [CliTestRun(program=program, created_at=now - timedelta(hours=1)) for _ in range(10)]
        + [CliTestRun(program=program, created_at=now - timedelta(minutes=1)) for _ in range(9)]
    )
    with time_machine.travel(now, tick=False):
        response = run(api_client, program.raw_api_key)
    assert response.status_code == 200
    assert response.json()["data"]["limit"]["runs_remaining"] == 0


def test_a_failure_is_a_500_with_the_request_id(api_client, program):
    with mock.patch("cli_api.services.verification_run", side_effect=RuntimeError("boom")):
        response = run(api_client, program.raw_api_key, HTTP_X_REQUEST_ID="req-test-event")
    assert response.status_code == 500
    assert response["X-Request-ID"] == "req-test-event"
    assert response.json() == platform_error(
        500,
        "InternalServerError",
        "Failed to run test event (request_id: req-test-event)",
        details={"request_id": "req-test-event"},
    )


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "Missing or malformed Authorization header. Expected: Bearer <token>"),
        ({"HTTP_AUTHORIZATION": "Bearer aff_nope"}, "Invalid API token"),
    ],
)
def test_a_missing_or_unknown_key_is_a_401_and_runs_nothing(api_client, headers, message):
    response = api_client.post(TEST_EVENT, **headers)
    assert response.status_code == 401
    assert error_of(response)["message"] == message
    assert response.has_header("X-Request-ID")
    assert not CliTestRun.objects.exists() and not ClickEvent.objects.exists()


def test_the_verification_link_is_marked_synthetic_so_readiness_ignores_it():
    from cli_api.services import verification_fixture_ensure
    from insight.readiness import readiness_compute

    program = ProgramFactory()
    fixture = verification_fixture_ensure(program=program)
    assert fixture is not None and fixture.link.is_synthetic
    referral = next(c for c in readiness_compute(program=program)["checks"] if c["id"] == "referral_links")
    assert referral["status"] == "fail"
