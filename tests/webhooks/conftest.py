"""The webhook tests deliver to a real local receiver (tests/webhook_receiver.py)."""

from collections.abc import Iterator

import pytest

from programs.models import Program
from tests.factories import WebhookEndpointFactory
from tests.webhook_receiver import Receiver, receiving
from webhooks.models import WebhookEndpoint
from webhooks.signing import secret_generate


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    # The receiver listens on loopback, which the delivery guard refuses unless private URLs are allowed.
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    with receiving() as server:
        yield server


def endpoint_to(receiver: Receiver, program: Program, **fields) -> WebhookEndpoint:
    """An endpoint of the program delivering to the receiver, which trusts its secret."""
    secret = secret_generate()
    receiver.trust(secret)
    return WebhookEndpointFactory.create(program=program, **{"url": receiver.url, **fields}, secret=secret)
