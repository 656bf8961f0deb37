"""Two polls racing after sign-in: the session row is locked while the token is created, so exactly one gets it."""

import threading
import time
from unittest import mock

import pytest
from django.db import connection
from rest_framework.test import APIClient

from cli_api import services
from cli_api.models import CliToken

from .conftest import POLL, sign_in, start_login

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_exactly_one_of_concurrent_polls_gets_the_token(account):
    client = APIClient()
    state = start_login(client)
    assert sign_in(client, account.user, state).status_code == 200

    create = services.cli_token_create

    def slow_create(**kwargs):
        # Hold the lock long enough that every other poll has reached SELECT … FOR UPDATE and waits on it.
        time.sleep(0.3)
        return create(**kwargs)

    polls = 6
    barrier = threading.Barrier(polls)
    answers: list[tuple[int, dict]] = []
    failures: list[BaseException] = []

    def poll() -> None:
        try:
            barrier.wait(timeout=10)
            response = APIClient().get(POLL, {"state": state})
            answers.append((response.status_code, response.json()))
        except BaseException as exc:  # reported below; a thread's exception would otherwise vanish
            failures.append(exc)
        finally:
            connection.close()

    with mock.patch.object(services, "cli_token_create", side_effect=slow_create):
        threads = [threading.Thread(target=poll) for _ in range(polls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

    assert failures == []
    winners = [body for status, body in answers if status == 200]
    losers = [body for status, body in answers if status == 400]
    assert len(winners) == 1 and winners[0]["data"]["status"] == "complete"
    assert len(losers) == polls - 1
    assert {body["error"]["message"] for body in losers} == {"Session already consumed"}
    assert CliToken.objects.count() == 1
