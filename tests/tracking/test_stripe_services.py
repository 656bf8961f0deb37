"""The writes behind the Stripe webhook and the admin replay: storing a verified event and replaying stored events.
Both queue processing only after their transaction commits."""

from typing import Any

import pytest

from tests.factories import ProgramFactory
from tests.stripe_payloads import ACCOUNT, checkout_session, event
from tracking.models import ProcessorEvent
from tracking.stripe.services import ProcessorEventStored, processor_event_store, processor_events_replay

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    sent: list[tuple] = []
    monkeypatch.setattr(
        "tracking.stripe.services.processor_event_attempt_task.apply_async",
        lambda args, **options: sent.append(tuple(args)),
    )
    return sent


def store(payload: dict[str, Any]) -> ProcessorEventStored:
    return processor_event_store(event_id=payload["id"], payload=payload)


def test_storing_a_new_event_answers_stored_and_queues_it_after_commit(queued, django_capture_on_commit_callbacks):
    program = ProgramFactory(stripe_account_id=ACCOUNT)
    payload = event("checkout.session.completed", checkout_session())
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        stored = store(payload)
    assert stored.duplicate is False and stored.event_id == payload["id"]
    assert stored.event == ProcessorEvent.objects.get() and stored.event.program == program
    assert queued == []  # nothing reaches the broker before the row is committed
    for callback in callbacks:
        callback()
    assert queued == [(stored.event.pk,)]


def test_storing_a_redelivery_answers_duplicate_and_queues_nothing(queued, django_capture_on_commit_callbacks):
    payload = event("checkout.session.completed", checkout_session(), account="acct_unknown")
    with django_capture_on_commit_callbacks(execute=True):
        first = store(payload)
    with django_capture_on_commit_callbacks(execute=True) as again:
        second = store(payload)
    assert first.event is not None and first.event.program is None
    assert second == ProcessorEventStored(event_id=payload["id"], duplicate=True)
    assert ProcessorEvent.objects.count() == 1 and again == [] and queued == [(first.event.pk,)]


def test_replaying_puts_events_back_to_received_and_queues_each_after_commit(
    queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        failed = store(event("checkout.session.completed", checkout_session())).event
        processed = store(event("invoice.payment_succeeded", checkout_session())).event
    queued.clear()
    ProcessorEvent.objects.filter(pk=failed.pk).update(status="failed")
    ProcessorEvent.objects.filter(pk=processed.pk).update(status="processed")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        count = processor_events_replay(event_pks=[processed.pk, failed.pk, 0])
    assert count == 2 and queued == []
    assert set(ProcessorEvent.objects.values_list("status", flat=True)) == {"received"}
    for callback in callbacks:
        callback()
    assert sorted(queued) == sorted([(failed.pk,), (processed.pk,)])
