"""The spec's limits count per server instance, whatever its number of workers: calls sent at once reach several
workers, and the instance still lets exactly the limit through. On the embedded default (an SQLite file per
instance) and with REDIS_URL (Redis keys under the instance's id)."""

from collections import Counter

import httpx
import pytest
import redis

from programs.models import ProgramKey
from programs.services import program_key_regenerate
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.helpers import assert_rate_limited

from .conftest import key_has_a_full_window, loopback_with_a_full_window, send_concurrently

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_of_61_clicks_from_one_ip_in_a_minute_exactly_60_pass(any_served):
    link = ReferralLinkFactory()
    body = {"affiliate_url": f"https://{link.program.domain}/pricing?aff={link.short_link}"}
    # The server sees this loopback address as the client's IP (REMOTE_ADDR).
    transport = httpx.HTTPTransport(local_address=loopback_with_a_full_window())

    with httpx.Client(base_url=any_served.url, transport=transport, timeout=15) as client:
        responses = send_concurrently(lambda n: client.post("/api/v1/track/click", json=body), 61)

    assert Counter(response.status_code for response in responses) == {200: 60, 429: 1}
    assert_rate_limited(next(response for response in responses if response.status_code == 429))
    assert len(any_served.pids_that_answered("/api/v1/track/click")) >= 2
    if any_served.redis_url:
        # Under the id the gunicorn master made: instances sharing one Redis count apart.
        assert redis.Redis.from_url(any_served.redis_url).keys("ratelimit:gunicorn-*:rl:*")


def test_of_121_sale_and_refund_calls_on_one_key_the_121st_is_refused(any_served):
    program = ProgramFactory()
    key = program.raw_api_key
    while not key_has_a_full_window(key):
        key = program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
    # Calls the route refuses (400, 404) count as well; half sales, half refunds, on one key.
    calls = [("/api/v1/track/sale", {}), ("/api/v1/track/refund", {"transaction_id": "unknown"})] * 60
    calls.append(("/api/v1/track/sale", {}))

    with httpx.Client(base_url=any_served.url, headers={"Authorization": f"Bearer {key}"}, timeout=15) as client:
        responses = send_concurrently(lambda n: client.post(calls[n][0], json=calls[n][1]), len(calls))

    statuses = Counter(response.status_code for response in responses)
    assert statuses[429] == 1 and sum(statuses.values()) == 121, statuses
    assert_rate_limited(next(response for response in responses if response.status_code == 429))
    assert len(any_served.pids_that_answered("/api/v1/track/")) >= 2
