"""The sweep fans out what was not fanned out and sends what is due, never a delivery being sent or one that
succeeded; two attempts at once send one request; resending sends the same event again, logged as manual;
pruning drops old events with their log but keeps those still being delivered."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from tests.factories import ProgramFactory, WebhookEndpointFactory
from tests.helpers import run_together
from tests.webhook_receiver import Reply
from tests.webhooks.builders import emit, new_delivery
from tests.webhooks.conftest import endpoint_to
from webhooks import messages
from webhooks.delivery import delivery_attempt
from webhooks.events import event_new
from webhooks.fanout import event_fan_out, webhook_events_prune, webhooks_sweep
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEvent
from webhooks.services import WebhookRefused, deliveries_resend_failed, delivery_resend, endpoint_update

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def program():
    return ProgramFactory()


def fresh(delivery: WebhookDelivery) -> WebhookDelivery:
    delivery.refresh_from_db()
    return delivery


@pytest.mark.django_db
class TestSweep:
    def test_it_fans_out_an_event_never_fanned_out_and_sends_it(self, receiver, program):
        endpoint_to(receiver, program)
        event = emit(program)  # its on-commit fan-out never ran, as when the broker is down
        assert webhooks_sweep() == (1, 1)
        assert receiver.ids() == [event.public_id]
        assert WebhookDelivery.objects.get(event=event).status == "succeeded"
        assert webhooks_sweep() == (0, 0)
        assert receiver.ids() == [event.public_id]

    def test_a_succeeded_delivery_is_never_sent_again(self, receiver, program, time_machine):
        delivery = new_delivery(program, endpoint_to(receiver, program))
        delivery_attempt(delivery_id=delivery.pk)
        time_machine.move_to(timezone.now() + timedelta(days=3))
        assert webhooks_sweep() == (0, 0)
        assert delivery_attempt(delivery_id=delivery.pk) is None
        assert len(receiver.requests) == 1 and fresh(delivery).attempts == 1

    def test_it_sends_a_retry_once_it_is_due(self, receiver, program, time_machine):
        time_machine.move_to(NOW, tick=False)
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(Reply(status=500))
        delivery_attempt(delivery_id=delivery.pk)
        assert webhooks_sweep() == (0, 0)
        time_machine.move_to(fresh(delivery).next_attempt_at, tick=False)
        assert webhooks_sweep() == (0, 1)
        assert fresh(delivery).status == "succeeded" and len(receiver.requests) == 2

    def test_it_leaves_a_delivery_being_sent_until_its_lease_runs_out(self, receiver, program, time_machine):
        time_machine.move_to(NOW, tick=False)
        delivery = new_delivery(program, endpoint_to(receiver, program))
        # A worker took it and died mid-request.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(leased_until=NOW + timedelta(seconds=45))
        assert webhooks_sweep() == (0, 0)
        assert delivery_attempt(delivery_id=delivery.pk) is None
        time_machine.move_to(NOW + timedelta(seconds=46), tick=False)
        assert webhooks_sweep() == (0, 1)
        assert len(receiver.requests) == 1 and fresh(delivery).status == "succeeded"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_attempts_at_once_send_one_request(receiver, program, time_machine):
    endpoint = endpoint_to(receiver, program)
    # Committed at once here, the on-commit tasks (run eagerly) would send it before the two attempts: the event's
    # fan-out is left out and its delivery made due a minute from now.
    event = event_new(program_id=program.pk, type="sale.created", livemode=True, data={})
    event.save()
    due = timezone.now() + timedelta(minutes=1)
    event_fan_out(event_id=event.pk, now=due)
    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
    time_machine.move_to(due)
    receiver.script(Reply(status=200, delay=0.5))
    outcomes = run_together(2, lambda _: delivery_attempt(delivery_id=delivery.pk))
    assert sorted(outcome is None for outcome in outcomes) == [False, True]
    assert len(receiver.requests) == 1
    delivery = fresh(delivery)
    assert (delivery.status, delivery.attempts) == ("succeeded", 1)
    assert WebhookAttempt.objects.filter(delivery=delivery).count() == 1


def failed_delivery(receiver, program, endpoint, settings) -> WebhookDelivery:
    """A delivery whose only attempt failed with no retry left."""
    settings.WEBHOOK_RETRY_SCHEDULE = []
    delivery = new_delivery(program, endpoint)
    receiver.script(Reply(status=500))
    delivery_attempt(delivery_id=delivery.pk)
    assert fresh(delivery).status == "failed"
    return delivery


@pytest.mark.django_db
class TestResend:
    def test_it_sends_a_failed_delivery_again_with_the_same_id_logged_as_manual(
        self, receiver, program, settings, django_capture_on_commit_callbacks
    ):
        endpoint = endpoint_to(receiver, program)
        delivery = failed_delivery(receiver, program, endpoint, settings)

        with django_capture_on_commit_callbacks(execute=True):
            assert delivery_resend(delivery_id=delivery.pk) is True

        first, again = receiver.requests
        assert again.webhook_id == first.webhook_id == delivery.event.public_id
        assert list(again.verified.values()) == [True]
        delivery = fresh(delivery)
        assert (delivery.status, delivery.attempts, delivery.resent) == ("succeeded", 2, False)
        assert list(delivery.attempt_log.order_by("number").values_list("number", "manual", "succeeded")) == [
            (1, False, False),
            (2, True, True),
        ]

    def test_a_resent_delivery_gets_a_fresh_schedule(self, receiver, program, settings, time_machine):
        time_machine.move_to(NOW, tick=False)
        endpoint = endpoint_to(receiver, program)
        delivery = failed_delivery(receiver, program, endpoint, settings)
        settings.WEBHOOK_RETRY_SCHEDULE = [60]
        delivery_resend(delivery_id=delivery.pk)
        receiver.script(Reply(status=500))
        delivery_attempt(delivery_id=delivery.pk)
        delivery = fresh(delivery)
        assert delivery.status == "pending" and delivery.next_attempt_at is not None  # first step of a new schedule

    def test_a_pending_delivery_is_not_resent(self, receiver, program):
        delivery = new_delivery(program, endpoint_to(receiver, program))
        assert delivery_resend(delivery_id=delivery.pk) is False
        assert fresh(delivery).resent is False

    def test_it_is_refused_when_the_endpoint_is_disabled(self, receiver, program, settings):
        endpoint = endpoint_to(receiver, program)
        delivery = failed_delivery(receiver, program, endpoint, settings)
        endpoint_update(endpoint_id=endpoint.pk, changes={"enabled": False})
        with pytest.raises(WebhookRefused, match=messages.ENDPOINT_DISABLED_NO_RESEND):
            delivery_resend(delivery_id=delivery.pk)
        with pytest.raises(WebhookRefused, match=messages.ENDPOINT_DISABLED_NO_RESEND):
            deliveries_resend_failed(endpoint_id=endpoint.pk, since=NOW - timedelta(days=9), until=timezone.now())
        assert (fresh(delivery).status, fresh(delivery).resent) == ("failed", False)
        assert len(receiver.requests) == 1

    def test_resending_a_period_picks_only_its_failed_deliveries(
        self, receiver, program, settings, time_machine, django_capture_on_commit_callbacks
    ):
        time_machine.move_to(NOW - timedelta(days=4), tick=False)
        endpoint = endpoint_to(receiver, program)
        settings.WEBHOOK_RETRY_SCHEDULE = []

        def delivery_at(when: datetime, reply: int | None) -> WebhookDelivery:
            time_machine.move_to(when, tick=False)
            delivery = new_delivery(program, endpoint)
            if reply is not None:
                receiver.script(Reply(status=reply))
                delivery_attempt(delivery_id=delivery.pk)
            return fresh(delivery)

        before = delivery_at(NOW - timedelta(days=3), 500)
        inside_failed = delivery_at(NOW - timedelta(days=1), 500)
        inside_succeeded = delivery_at(NOW - timedelta(days=1, hours=-1), 200)
        inside_pending = delivery_at(NOW - timedelta(days=1, hours=-2), None)
        at_until = delivery_at(NOW, 500)
        sent = len(receiver.requests)

        with pytest.raises(WebhookRefused, match=messages.RESEND_PERIOD_INVALID):
            deliveries_resend_failed(endpoint_id=endpoint.pk, since=NOW, until=NOW)
        with django_capture_on_commit_callbacks(execute=True):
            resent = deliveries_resend_failed(endpoint_id=endpoint.pk, since=NOW - timedelta(days=2), until=NOW)

        assert resent == 1
        assert receiver.ids()[sent:] == [inside_failed.event.public_id]
        assert fresh(inside_failed).status == "succeeded"
        assert inside_failed.attempt_log.get(number=2).manual is True
        assert (fresh(before).status, fresh(at_until).status) == ("failed", "failed")
        assert (fresh(inside_succeeded).attempts, fresh(inside_pending).attempts) == (1, 0)


@pytest.mark.django_db
def test_pruning_drops_old_events_with_their_log_but_keeps_those_still_pending(program, settings, time_machine):
    settings.WEBHOOK_EVENT_RETENTION_DAYS = 30
    time_machine.move_to(NOW - timedelta(days=31), tick=False)
    endpoint = WebhookEndpointFactory(program=program)
    succeeded = new_delivery(program, endpoint)
    WebhookDelivery.objects.filter(pk=succeeded.pk).update(status=DeliveryStatus.SUCCEEDED)
    WebhookAttempt.objects.create(delivery=succeeded, number=1, status_code=200, succeeded=True)
    failed = new_delivery(program, endpoint)
    WebhookDelivery.objects.filter(pk=failed.pk).update(status=DeliveryStatus.FAILED)
    pending = new_delivery(program, endpoint)
    emit(program, "lead.created")  # an event with no delivery
    time_machine.move_to(NOW - timedelta(days=29), tick=False)
    recent = new_delivery(program, endpoint)

    time_machine.move_to(NOW, tick=False)
    assert webhook_events_prune() == 3

    assert set(WebhookEvent.objects.values_list("pk", flat=True)) == {pending.event_id, recent.event_id}
    assert set(WebhookDelivery.objects.values_list("pk", flat=True)) == {pending.pk, recent.pk}
    assert not WebhookAttempt.objects.exists()
    assert webhook_events_prune() == 0
