"""Which events are fanned out at once and which wait for the sweep (webhooks.events.event_saved): an event of a
program that an endpoint may want is queued after its commit; the others (most events, on most programs) cost no
broker message and are fanned out by the sweep in batches. A process that has not heard of a new endpoint yet only
delays its events to the next sweep: nothing is lost."""

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import ProgramFactory, WebhookEndpointFactory
from webhooks.events import endpoints_changed, event_emit, program_has_endpoints
from webhooks.fanout import webhooks_sweep
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.services import endpoint_create, endpoint_update

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued(monkeypatch) -> list[tuple[str, tuple[Any, ...]]]:
    """The tasks queued, recorded instead of run."""
    sent: list[tuple[str, tuple[Any, ...]]] = []
    monkeypatch.setattr("webhooks.queue.enqueue", lambda task, *args, **options: sent.append((task.name, args)))
    return sent


def emit(program) -> WebhookEvent:
    return event_emit(program_id=program.pk, type="sale.created", livemode=True, data={}, object_id=1)


def test_an_event_no_endpoint_wants_is_not_queued_and_the_sweep_fans_it_out(queued):
    program = ProgramFactory()
    event = emit(program)
    assert queued == []
    webhooks_sweep()
    event.refresh_from_db()
    assert event.fanned_out_at is not None and not WebhookDelivery.objects.exists()


def test_an_event_of_a_program_with_an_endpoint_is_queued_after_its_commit(queued, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    program = ProgramFactory()
    emit(program)  # this process now believes the program has no endpoint
    made = endpoint_create(
        workspace_id=program.workspace_id, program_id=program.pk, url="http://127.0.0.1:9/hook", event_types=["*"]
    )
    event = emit(program)  # the service cleared what this process believed
    assert queued == [("webhooks.fan_out", (event.pk,))]
    endpoint_update(endpoint_id=made.endpoint.pk, changes={"enabled": False})
    queued.clear()
    emit(program)
    assert queued == []


def test_a_workspace_wide_endpoint_counts_for_every_program_of_its_workspace(queued):
    program = ProgramFactory()
    sibling = ProgramFactory(workspace=program.workspace)
    WebhookEndpointFactory(program=None, workspace=program.workspace)
    assert program_has_endpoints(program.pk) and program_has_endpoints(sibling.pk)
    assert not program_has_endpoints(ProgramFactory().pk)


def test_an_endpoint_made_by_another_process_gets_the_event_from_the_sweep(queued):
    program = ProgramFactory()
    assert not program_has_endpoints(program.pk)  # believed for WEBHOOK_ENDPOINT_CACHE_SECONDS
    # Another process makes the endpoint: this one's belief is stale.
    endpoint = WebhookEndpointFactory.build(program=program, workspace=program.workspace)
    WebhookEndpoint.objects.bulk_create([endpoint])
    event = emit(program)
    assert queued == []
    webhooks_sweep()
    assert WebhookDelivery.objects.filter(event=event).count() == 1
    assert queued == [("webhooks.deliver", (WebhookDelivery.objects.get().pk,))]


def test_the_belief_is_asked_again_once_it_expires(queued, settings, monkeypatch):
    settings.WEBHOOK_ENDPOINT_CACHE_SECONDS = 5
    clock = [1000.0]
    monkeypatch.setattr("webhooks.events.time.monotonic", lambda: clock[0])
    program = ProgramFactory()
    assert not program_has_endpoints(program.pk)
    WebhookEndpoint.objects.bulk_create([WebhookEndpointFactory.build(program=program, workspace=program.workspace)])
    clock[0] += 4.9
    assert not program_has_endpoints(program.pk)
    clock[0] += 0.2
    assert program_has_endpoints(program.pk)


def test_with_no_cache_it_asks_every_time(queued, settings):
    settings.WEBHOOK_ENDPOINT_CACHE_SECONDS = 0
    program = ProgramFactory()
    assert not program_has_endpoints(program.pk)
    WebhookEndpoint.objects.bulk_create([WebhookEndpointFactory.build(program=program, workspace=program.workspace)])
    assert program_has_endpoints(program.pk)
    endpoints_changed()


def test_the_sweep_fans_out_a_batch_in_a_few_statements_whatever_its_size(queued):
    program = ProgramFactory()
    for _ in range(3):
        emit(program)
    with CaptureQueriesContext(connection) as few:
        webhooks_sweep()
    for _ in range(60):
        emit(program)
    with CaptureQueriesContext(connection) as many:
        webhooks_sweep()
    assert len(many) == len(few)
    assert not WebhookEvent.objects.filter(fanned_out_at__isnull=True).exists()


def test_a_failing_belief_never_fails_the_change(queued, monkeypatch, caplog):
    def broken(program_id):
        raise RuntimeError("database went away")

    monkeypatch.setattr("webhooks.events.program_has_endpoints", broken)
    program = ProgramFactory()
    event = emit(program)
    assert WebhookEvent.objects.filter(pk=event.pk).exists()
    assert any(record.message.startswith("webhooks.fan_out_not_queued:") for record in caplog.records)
