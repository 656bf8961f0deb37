"""Concurrent test-event calls near the cap: the program's row lock makes count-then-insert atomic, so the cap of
10 per hour holds however many arrive at once (and across server instances, since the count is in the database)."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from cli_api.models import CliTestFixture, CliTestRun
from tests.helpers import run_together

from .conftest import TEST_EVENT

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_runs_never_exceed_the_cap(program):
    CliTestRun.objects.bulk_create([CliTestRun(program=program, created_at=timezone.now()) for _ in range(7)])
    calls = 6

    def call(n: int) -> int:
        return APIClient().post(TEST_EVENT, HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}").status_code

    statuses = run_together(calls, call)

    assert sorted(statuses) == [200, 200, 200, 429, 429, 429]
    assert CliTestRun.objects.filter(program=program).count() == 10
    # The fixture was created once, not once per racing call.
    assert CliTestFixture.objects.filter(program=program).count() == 1
