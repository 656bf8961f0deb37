"""Webhooks as deployed: gunicorn (3 workers) on the test database and Redis, a real Celery worker, and a real
receiver on another port that verifies every request with the standardwebhooks library. Sales and refunds sent
concurrently over HTTP reach the receiver once per event and endpoint, signed; a receiver that fails at first gets
the event again from the worker's retry."""

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, WebhookEndpointFactory
from tests.gunicorn import gunicorn_serving
from tests.helpers import run_together
from tests.webhook_receiver import Reply, receiving
from tests.worker import celery_worker_running, wait_for
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEvent

from .conftest import _test_database_url, webhooks_env

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SALES = 12


@dataclass
class Layout:
    url: str
    log: Path


@pytest.fixture(scope="module")
def layout(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Layout]:
    redis_url = os.environ["REDIS_URL"]  # the `worker` marker skips these tests without it
    database_url = _test_database_url()
    queue = f"test-{uuid.uuid4().hex[:8]}"
    directory = tmp_path_factory.mktemp("webhooks-served")
    env = webhooks_env(redis_url=redis_url, queue=queue)
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # the worker starts from this process's environment
    try:
        with django_db_blocker.unblock():
            log = directory / "gunicorn.log"
            with (
                gunicorn_serving(env=env, log=log, workers=3) as url,
                celery_worker_running(queue=queue, database_url=database_url, redis_url=redis_url),
            ):
                yield Layout(url=url, log=log)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def program():
    """20 % commissions credited at once (hold 0): each sale announces sale.created, commission.created and
    commission.approved."""
    program = ProgramFactory.create(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)
    link = ReferralLinkFactory(program=program)
    for n in range(SALES):
        CustomerFactory(link=link, customer_key=f"user-{n}")
    return program


def _post(url: str, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        return client.post(path, json=body)


def _deliveries_settled(count: int) -> bool:
    return WebhookDelivery.objects.filter(status=DeliveryStatus.SUCCEEDED).count() >= count


def test_concurrent_sales_over_http_reach_the_receiver_once_per_event_and_signed(layout, program):
    with receiving() as receiver:
        endpoint = WebhookEndpointFactory(program=program, url=receiver.url, event_types=["*"])
        key = program.raw_api_key
        # Every sale twice at once: one is recorded (200), its twin refused (409) and announces nothing.
        bodies = [
            {"transaction_id": f"txn-{n}", "amount_cents": 10000, "customer_key": f"user-{n}"} for n in range(SALES)
        ]
        responses = run_together(2 * SALES, lambda n: _post(layout.url, key, "/api/v1/track/sale", bodies[n // 2]))
        assert Counter(response.status_code for response in responses) == {200: SALES, 409: SALES}

        expected = 3 * SALES
        assert wait_for(lambda: _deliveries_settled(expected), timeout=60), WebhookDelivery.objects.values_list(
            "status", "last_error"
        )
        events = receiver.verified_payloads(endpoint.secret_for_tests)
        ids = [event["id"] for event in events]
        assert len(ids) == len(set(ids)) == expected, "each event delivered once"
        assert Counter(event["type"] for event in events) == {
            "sale.created": SALES,
            "commission.created": SALES,
            "commission.approved": SALES,
        }
        assert {event["data"]["transaction_id"] for event in events if event["type"] == "sale.created"} == {
            body["transaction_id"] for body in bodies
        }
        assert all(request.webhook_id == request.payload()["id"] for request in receiver.requests)
        assert WebhookEvent.objects.filter(program=program).count() == expected


def test_a_receiver_that_fails_first_gets_the_event_from_the_workers_retry(layout, program):
    with receiving() as receiver:
        receiver.script(Reply(status=500))
        endpoint = WebhookEndpointFactory(program=program, url=receiver.url, event_types=["sale.created"])
        body = {"transaction_id": "txn-retry", "amount_cents": 10000, "customer_key": "user-0"}
        assert _post(layout.url, program.raw_api_key, "/api/v1/track/sale", body).status_code == 200

        # The first retry is 5 s later (jittered by a fifth); the worker queues it with a countdown.
        assert wait_for(lambda: _deliveries_settled(1), timeout=30)
        [delivery] = WebhookDelivery.objects.filter(endpoint=endpoint)
        attempts = list(WebhookAttempt.objects.filter(delivery=delivery).order_by("number"))
        assert [(a.number, a.status_code, a.succeeded) for a in attempts] == [(1, 500, False), (2, 200, True)]
        gap = (attempts[1].started_at - attempts[0].started_at).total_seconds()
        assert 3.5 <= gap <= 10
        events = receiver.verified_payloads(endpoint.secret_for_tests)
        assert [event["id"] for event in events] == [delivery.event.public_id] * 2
