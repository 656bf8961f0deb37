"""Two polls racing after sign-in: the session row is locked while the token is created, so exactly one gets it."""

import threading
from unittest import mock

import pytest
from rest_framework.test import APIClient

from cli_api import services
from cli_api.models import CliToken
from tests.helpers import run_together, wait_for_lock_waiters

from .conftest import POLL, sign_in, start_login

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_exactly_one_of_concurrent_polls_gets_the_token(account):
    client = APIClient()
    state = start_login(client)
    assert sign_in(client, account.user, state).status_code == 200

    polls = 6
    holding = threading.Event()  # the first poll holds the session's row lock and is creating the token
    rivals_done: list[int] = []

    def poll(n: int) -> tuple[int, dict]:
        if n > 0:
            assert holding.wait(timeout=30)
        try:
            response = APIClient().get(POLL, {"state": state})
            return response.status_code, response.json()
        finally:
            if n > 0:
                rivals_done.append(n)

    create = services.cli_token_create

    def create_once_rivals_queue(**kwargs):
        # Hold the lock until every other poll waits on its SELECT … FOR UPDATE (or, were the lock missing,
        # until they have all read the unconsumed session and finished).
        if not holding.is_set():
            holding.set()
            wait_for_lock_waiters(polls - 1, or_until=lambda: len(rivals_done) == polls - 1)
        return create(**kwargs)

    with mock.patch.object(services, "cli_token_create", side_effect=create_once_rivals_queue):
        answers = run_together(polls, poll)

    winners = [body for status, body in answers if status == 200]
    losers = [body for status, body in answers if status == 400]
    assert len(winners) == 1 and winners[0]["data"]["status"] == "complete"
    assert len(losers) == polls - 1
    assert {body["error"]["message"] for body in losers} == {"Session already consumed"}
    assert CliToken.objects.count() == 1
