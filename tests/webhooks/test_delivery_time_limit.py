"""An attempt is bounded as a whole, not only per read: the delivery task's soft time limit (the receiver's timeout
plus three seconds) stops a receiver that trickles its headers a byte at a time, and the attempt is logged as timed
out rather than left to its lease, after which another worker would send it again."""

import httpx
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from tests.factories import ProgramFactory, WebhookEndpointFactory
from tests.webhooks.builders import new_delivery
from webhooks.delivery import LEASE_MARGIN_SECONDS, delivery_attempt
from webhooks.models import DeliveryStatus, WebhookAttempt
from webhooks.tasks import webhook_delivery_attempt_task

pytestmark = pytest.mark.django_db


def test_the_delivery_task_is_limited_within_its_lease():
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    assert webhook_delivery_attempt_task.soft_time_limit == timeout + 3
    assert webhook_delivery_attempt_task.time_limit == timeout + 6
    # The lease outlives the hard limit with room to write the outcome, and stays short: a killed worker's
    # delivery waits for it.
    assert webhook_delivery_attempt_task.time_limit + 3 <= timeout + LEASE_MARGIN_SECONDS <= timeout + 10


def test_an_attempt_stopped_by_the_soft_limit_is_logged_as_timed_out_and_retried(settings, monkeypatch):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    program = ProgramFactory()
    endpoint = WebhookEndpointFactory(program=program, url="http://127.0.0.1:9/hook")
    delivery = new_delivery(program, endpoint)

    def trickling(self, *args, **kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(httpx.Client, "stream", trickling)
    outcome = delivery_attempt(delivery_id=delivery.pk)
    assert outcome is not None and outcome.error == f"timed out after {settings.WEBHOOK_TIMEOUT_SECONDS} s"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.leased_until, delivery.last_error) == (
        DeliveryStatus.PENDING,
        None,
        outcome.error,
    )
    assert WebhookAttempt.objects.get(delivery=delivery).error == outcome.error
