"""Crosses processes: events committed while Redis is unreachable are kept in the outbox, and once it is back the
sweep, run by a real Celery worker, delivers every one of them to the receiver exactly once."""

import logging

import pytest
from rest_framework.test import APIClient

from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.webhooks.conftest import endpoint_to
from tests.worker import wait_for
from webhooks.fanout import webhooks_sweep
from webhooks.models import WebhookDelivery, WebhookEvent
from webhooks.tasks import webhooks_sweep_task

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SALES = 3


def post_sale(program, transaction_id: str):
    return APIClient().post(
        "/api/v1/track/sale",
        {"transaction_id": transaction_id, "amount_cents": 10000, "customer_key": "user_1"},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}",
    )


def test_events_committed_with_the_broker_down_are_all_delivered_once_it_is_back(
    receiver, broker_down, request, caplog, monkeypatch
):
    program = ProgramFactory(hold_days=30)
    CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1", customer_status="lead")
    endpoint_to(receiver, program)

    with caplog.at_level(logging.ERROR, logger="svc.tasks"):
        responses = [post_sale(program, f"txn_{n}") for n in range(SALES)]
    assert [response.status_code for response in responses] == [200] * SALES
    assert any(message.startswith("task.enqueue_failed:") for message in caplog.messages)
    events = list(WebhookEvent.objects.order_by("pk"))
    assert [event.type for event in events] == ["sale.created", "commission.created"] * SALES
    assert all(event.fanned_out_at is None for event in events)
    assert not WebhookDelivery.objects.exists() and receiver.requests == []

    broker_down()  # the broker is back
    # The worker is another process: it reads its settings from the environment.
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_URLS", "true")
    request.getfixturevalue("celery_worker_process")
    webhooks_sweep_task.delay()

    expected = sorted(event.public_id for event in events)
    assert wait_for(lambda: len(receiver.requests) >= len(events), timeout=60), receiver.ids()
    assert wait_for(lambda: WebhookDelivery.objects.filter(status="succeeded").count() == len(events))
    assert sorted(receiver.ids()) == expected
    assert all(list(request.verified.values()) == [True] for request in receiver.requests)

    # Nothing is sent twice: another sweep finds nothing; one more through the worker, then a new sale whose
    # events arrive after it (the worker takes one task at a time, in order), adds only the new events.
    assert webhooks_sweep() == (0, 0)
    webhooks_sweep_task.delay()
    assert post_sale(program, "txn_after").status_code == 200
    assert wait_for(lambda: len(receiver.requests) >= len(events) + 2, timeout=60)
    ids = receiver.ids()
    assert len(ids) == len(set(ids)) == len(events) + 2
    assert sorted(ids) == sorted(WebhookEvent.objects.values_list("public_id", flat=True))
