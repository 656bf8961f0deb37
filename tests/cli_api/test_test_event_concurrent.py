"""Concurrent test-event calls near the cap: the program's row lock makes count-then-insert atomic, so the cap of
10 per hour holds however many arrive at once (and across server instances, since the count is in the database)."""

import threading

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from cli_api.models import CliTestFixture, CliTestRun

from .conftest import TEST_EVENT

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_runs_never_exceed_the_cap(program):
    CliTestRun.objects.bulk_create([CliTestRun(program=program, created_at=timezone.now()) for _ in range(7)])
    calls = 6
    barrier = threading.Barrier(calls)
    statuses: list[int] = []
    failures: list[BaseException] = []

    def call() -> None:
        try:
            barrier.wait(timeout=10)
            response = APIClient().post(TEST_EVENT, HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
            statuses.append(response.status_code)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert sorted(statuses) == [200, 200, 200, 429, 429, 429]
    assert CliTestRun.objects.filter(program=program).count() == 10
    # The fixture was created once, not once per racing call.
    assert CliTestFixture.objects.filter(program=program).count() == 1
