"""Delivery to a real receiver: signed as Standard Webhooks (verified with the library), every attempt logged,
retried on the schedule with jitter, Retry-After honoured, timeouts logged, the endpoint disabled on a 410 or
after failing too long with its owners emailed once, and a success clearing the streak."""

import email.utils
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from tests.factories import MembershipFactory, ProgramFactory, UserFactory
from tests.webhook_receiver import Reply
from tests.webhooks.builders import delivery_of, emit, new_delivery
from tests.webhooks.conftest import endpoint_to
from webhooks import delivery as delivery_module
from webhooks.delivery import REASON_FAILING, REASON_GONE, Outcome, delivery_attempt, retry_delay
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.notices import SUBJECT

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def program():
    return ProgramFactory()


@pytest.fixture
def clock(time_machine):
    """Time stands still at NOW (so the stored times are exact) and moves only when a test moves it."""
    time_machine.move_to(NOW, tick=False)
    return time_machine


def attempts(delivery: WebhookDelivery) -> list[tuple[Any, ...]]:
    return list(
        WebhookAttempt.objects.filter(delivery=delivery)
        .order_by("number")
        .values_list("number", "status_code", "succeeded", "error")
    )


def fresh(delivery: WebhookDelivery) -> WebhookDelivery:
    delivery.refresh_from_db()
    return delivery


def seconds_until_next(delivery: WebhookDelivery) -> float:
    assert delivery.next_attempt_at is not None
    return (delivery.next_attempt_at - timezone.now()).total_seconds()


class TestSuccess:
    def test_the_receiver_verifies_the_signature_with_the_library_and_gets_the_envelope(self, receiver, program):
        endpoint = endpoint_to(receiver, program)
        event = emit(program, transaction_id="txn_9")
        delivery = delivery_of(event, endpoint)
        receiver.script(Reply(status=204, body=b""))

        outcome = delivery_attempt(delivery_id=delivery.pk)

        assert outcome is not None and outcome.succeeded
        [request] = receiver.requests
        assert list(request.verified.values()) == [True]
        assert request.webhook_id == event.public_id
        assert json.loads(request.body) == event.payload()
        assert json.loads(request.body)["data"] == {"id": 7, "amount_cents": 4900, "transaction_id": "txn_9"}
        assert abs(int(request.headers["webhook-timestamp"]) - timezone.now().timestamp()) < 5
        assert request.headers["webhook-signature"].startswith("v1,")
        assert request.headers["content-type"] == "application/json"
        assert request.path == "/hooks"

    def test_a_receiver_trusting_another_secret_does_not_verify_it(self, receiver, program):
        endpoint = endpoint_to(receiver, program)
        receiver.trust("whsec_" + "QUJD" * 11)
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        assert [request.verified for request in receiver.requests] == [{"whsec_" + "QUJD" * 11: False}]

    def test_the_attempt_is_logged_with_status_latency_and_excerpt(self, receiver, program):
        endpoint = endpoint_to(receiver, program)
        delivery = new_delivery(program, endpoint)
        receiver.script(Reply(status=200, body=b"received " * 200, delay=0.2))

        delivery_attempt(delivery_id=delivery.pk)

        delivery = fresh(delivery)
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == (DeliveryStatus.SUCCEEDED, 1, 200)
        assert delivery.delivered_at is not None and delivery.next_attempt_at is None
        assert delivery.leased_until is None and delivery.last_error == ""
        attempt = WebhookAttempt.objects.get(delivery=delivery)
        assert (attempt.number, attempt.status_code, attempt.succeeded, attempt.manual) == (1, 200, True, False)
        assert attempt.latency_ms >= 200
        assert attempt.response_excerpt == ("received " * 200)[:1000]
        assert attempt.error == ""


class TestRetries:
    def test_a_failing_receiver_is_retried_on_the_schedule_until_it_succeeds(self, receiver, program, clock, settings):
        endpoint = endpoint_to(receiver, program)
        delivery = new_delivery(program, endpoint)
        receiver.script(Reply(status=500, body=b"down"), Reply(status=502, body=b"still down"))
        schedule = settings.WEBHOOK_RETRY_SCHEDULE

        assert delivery_attempt(delivery_id=delivery.pk).status_code == 500
        delivery = fresh(delivery)
        assert (delivery.status, delivery.last_status_code, delivery.last_error) == ("pending", 500, "HTTP 500")
        assert 0.8 * schedule[0] <= seconds_until_next(delivery) <= 1.2 * schedule[0]
        endpoint.refresh_from_db()
        assert (endpoint.failing_since, endpoint.consecutive_failures) == (NOW, 1)

        assert delivery_attempt(delivery_id=delivery.pk) is None  # not due yet: nothing sent
        assert len(receiver.requests) == 1

        clock.move_to(delivery.next_attempt_at, tick=False)
        assert delivery_attempt(delivery_id=delivery.pk).status_code == 502
        delivery = fresh(delivery)
        assert 0.8 * schedule[1] <= seconds_until_next(delivery) <= 1.2 * schedule[1]

        clock.move_to(delivery.next_attempt_at, tick=False)
        assert delivery_attempt(delivery_id=delivery.pk).succeeded
        delivery = fresh(delivery)
        assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("succeeded", 3, None)
        assert attempts(delivery) == [(1, 500, False, ""), (2, 502, False, ""), (3, 200, True, "")]
        assert WebhookAttempt.objects.get(delivery=delivery, number=2).response_excerpt == "still down"
        assert len(set(receiver.ids())) == 1 and len(receiver.requests) == 3
        endpoint.refresh_from_db()
        assert (endpoint.failing_since, endpoint.consecutive_failures) == (None, 0)  # the success clears the streak

    @pytest.mark.parametrize("failed_attempts", [1, 2, 5, 9])
    def test_each_step_of_the_schedule_is_jittered_by_a_fifth_either_way(self, settings, failed_attempts):
        step = settings.WEBHOOK_RETRY_SCHEDULE[failed_attempts - 1]
        delays = {retry_delay(failed_attempts=failed_attempts, outcome=Outcome(status_code=500)) for _ in range(200)}
        assert all(0.8 * step <= delay <= 1.2 * step for delay in delays)
        assert len(delays) > 100  # jittered, not one fixed wait
        assert min(delays) < step < max(delays)

    def test_the_schedule_runs_over_about_three_days(self, settings):
        assert 2.5 * 86400 <= sum(settings.WEBHOOK_RETRY_SCHEDULE) <= 3.5 * 86400

    @pytest.mark.parametrize("status", [429, 503])
    def test_retry_after_in_seconds_sets_the_wait(self, receiver, program, clock, status):
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(Reply(status=status, retry_after="120"))
        delivery_attempt(delivery_id=delivery.pk)
        assert fresh(delivery).next_attempt_at == NOW + timedelta(seconds=120)

    @pytest.mark.parametrize("status", [429, 503])
    def test_retry_after_as_an_http_date_sets_the_wait(self, receiver, program, clock, status):
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(
            Reply(status=status, retry_after=email.utils.format_datetime(NOW + timedelta(minutes=45), usegmt=True))
        )
        delivery_attempt(delivery_id=delivery.pk)
        assert fresh(delivery).next_attempt_at == NOW + timedelta(minutes=45)

    def test_retry_after_is_capped(self, receiver, program, clock, settings):
        settings.WEBHOOK_RETRY_AFTER_MAX_SECONDS = 3600
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(Reply(status=429, retry_after="999999"))
        delivery_attempt(delivery_id=delivery.pk)
        assert fresh(delivery).next_attempt_at == NOW + timedelta(hours=1)

    def test_retry_after_on_another_status_is_ignored(self, receiver, program, clock, settings):
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(Reply(status=500, retry_after="3000"))
        delivery_attempt(delivery_id=delivery.pk)
        first_step = settings.WEBHOOK_RETRY_SCHEDULE[0]
        assert 0.8 * first_step <= seconds_until_next(fresh(delivery)) <= 1.2 * first_step

    def test_a_timeout_is_logged_as_the_attempts_error_and_retried(self, receiver, program, clock, settings):
        settings.WEBHOOK_TIMEOUT_SECONDS = 1
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(Reply(status=200, delay=3))

        outcome = delivery_attempt(delivery_id=delivery.pk)

        assert outcome is not None and not outcome.succeeded
        assert outcome.error == "timed out after 1 s"
        assert attempts(delivery) == [(1, None, False, "timed out after 1 s")]
        delivery = fresh(delivery)
        assert (delivery.status, delivery.last_error, delivery.last_status_code) == (
            "pending",
            "timed out after 1 s",
            None,
        )
        assert WebhookAttempt.objects.get(delivery=delivery).latency_ms >= 1000

    def test_a_receiver_that_answers_then_trickles_its_body_times_out_too(self, receiver, program, clock, settings):
        # Each byte comes within the timeout, the whole far later: the attempt must still end about when the
        # timeout says (its lease outlives the timeout only by a margin; past it, another worker may send again).
        settings.WEBHOOK_TIMEOUT_SECONDS = 1
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(Reply(status=200, body=b"x" * 20, byte_delay=0.5))  # 10 s in all

        started = time.monotonic()
        outcome = delivery_attempt(delivery_id=delivery.pk)

        assert time.monotonic() - started < 5
        assert outcome is not None and not outcome.succeeded
        assert outcome.error == "timed out after 1 s"
        assert attempts(delivery) == [(1, None, False, "timed out after 1 s")]
        assert fresh(delivery).status == "pending"

    def test_a_receiver_that_refuses_connections_is_logged_and_retried(self, receiver, program, clock):
        endpoint = endpoint_to(receiver, program)
        endpoint.url = "http://127.0.0.1:9/hooks"  # discard port: nothing listens
        endpoint.save()
        delivery = new_delivery(program, endpoint)
        delivery_attempt(delivery_id=delivery.pk)
        [(number, status, succeeded, error)] = attempts(delivery)
        assert (number, status, succeeded) == (1, None, False) and error.startswith("ConnectError")
        assert fresh(delivery).status == "pending"

    def test_when_the_schedule_is_used_up_the_delivery_fails(self, receiver, program, clock, settings):
        settings.WEBHOOK_RETRY_SCHEDULE = [5, 60]
        delivery = new_delivery(program, endpoint_to(receiver, program))
        receiver.script(*[Reply(status=500)] * 3)
        for _ in range(3):
            clock.move_to(fresh(delivery).next_attempt_at, tick=False)
            assert delivery_attempt(delivery_id=delivery.pk).status_code == 500
        delivery = fresh(delivery)
        assert (delivery.status, delivery.next_attempt_at, delivery.attempts) == ("failed", None, 3)
        assert [row[:2] for row in attempts(delivery)] == [(1, 500), (2, 500), (3, 500)]
        clock.shift(timedelta(days=1))
        assert delivery_attempt(delivery_id=delivery.pk) is None
        assert len(receiver.requests) == 3
        assert WebhookEndpoint.objects.get(pk=delivery.endpoint_id).enabled  # failing for minutes, not days


@pytest.fixture
def owners(program):
    """The workspace's active owner with an email (written to), and members who are not written to."""
    workspace = program.workspace
    owner = MembershipFactory(workspace=workspace, user=UserFactory(email="owner@example.com"))
    MembershipFactory(workspace=workspace, user=UserFactory(email="second-owner@example.com"))
    MembershipFactory(workspace=workspace, user=UserFactory(email="admin@example.com"), role="admin")
    MembershipFactory(workspace=workspace, user=UserFactory(email="gone@example.com"), is_active=False)
    MembershipFactory(workspace=workspace, user=UserFactory(email=""))
    MembershipFactory(user=UserFactory(email="other-workspace@example.com"))
    return owner


class TestDisabling:
    def test_a_410_disables_the_endpoint_at_once_and_emails_the_owners(
        self, receiver, program, owners, clock, django_capture_on_commit_callbacks
    ):
        endpoint = endpoint_to(receiver, program)
        delivery = new_delivery(program, endpoint)
        later = new_delivery(program, endpoint)
        receiver.script(Reply(status=410, body=b"gone"))

        with django_capture_on_commit_callbacks(execute=True):
            assert delivery_attempt(delivery_id=delivery.pk).status_code == 410

        endpoint.refresh_from_db()
        assert (endpoint.enabled, endpoint.disabled_at, endpoint.disabled_reason) == (False, NOW, REASON_GONE)
        assert (fresh(delivery).status, fresh(delivery).next_attempt_at) == ("failed", None)
        [message] = mail.outbox
        assert message.to == ["owner@example.com", "second-owner@example.com"]
        assert message.subject == SUBJECT.format(url=endpoint.url)
        assert REASON_GONE in message.body and program.name in message.body

        # The endpoint's other deliveries are not sent, and nobody is emailed again.
        with django_capture_on_commit_callbacks(execute=True):
            assert delivery_attempt(delivery_id=later.pk) is None
        assert (fresh(later).status, fresh(later).last_error) == ("failed", "endpoint disabled")
        assert len(receiver.requests) == 1 and len(mail.outbox) == 1

    def test_failing_longer_than_the_limit_disables_it_and_emails_once(
        self, receiver, program, owners, clock, settings, django_capture_on_commit_callbacks
    ):
        endpoint = endpoint_to(receiver, program)
        receiver.script(*[Reply(status=500)] * 10)
        first = new_delivery(program, endpoint)
        delivery_attempt(delivery_id=first.pk)
        endpoint.refresh_from_db()
        assert endpoint.failing_since == NOW

        clock.move_to(NOW + timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS) - timedelta(minutes=1), tick=False)
        with django_capture_on_commit_callbacks(execute=True):
            delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        endpoint.refresh_from_db()
        assert endpoint.enabled and mail.outbox == []  # failing just under the limit

        clock.move_to(NOW + timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS), tick=False)
        over = new_delivery(program, endpoint)
        with django_capture_on_commit_callbacks(execute=True):
            delivery_attempt(delivery_id=over.pk)
        endpoint.refresh_from_db()
        reason = REASON_FAILING.format(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS)
        assert (endpoint.enabled, endpoint.disabled_reason) == (False, reason)
        assert fresh(over).status == "failed"
        [message] = mail.outbox
        assert reason in message.body and message.to == ["owner@example.com", "second-owner@example.com"]

        with django_capture_on_commit_callbacks(execute=True):
            assert not delivery_module.endpoint_disable_failing(endpoint_id=endpoint.pk, reason=reason, now=NOW)
            clock.shift(timedelta(minutes=1))
            assert delivery_attempt(delivery_id=first.pk) is None  # its retry is due, but the endpoint is off
        assert len(mail.outbox) == 1

    def test_a_success_clears_the_failing_streak(self, receiver, program, clock, settings):
        endpoint = endpoint_to(receiver, program)
        receiver.script(Reply(status=500), Reply(status=500))
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        clock.shift(timedelta(hours=40))
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        endpoint.refresh_from_db()
        assert (endpoint.failing_since, endpoint.consecutive_failures) == (NOW, 2)

        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)  # 200
        endpoint.refresh_from_db()
        assert (endpoint.failing_since, endpoint.consecutive_failures) == (None, 0)

        # The streak starts again from the next failure: 40 more hours are not "failing for 72".
        receiver.script(Reply(status=500), Reply(status=500))
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        clock.shift(timedelta(hours=40))
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        endpoint.refresh_from_db()
        assert endpoint.enabled and endpoint.failing_since == NOW + timedelta(hours=40)


class WorkerKilled(BaseException):
    """What SIGKILL does to an attempt: nothing after this point runs, no except clause sees it."""


class TestAttemptsOnRecord:
    """The attempt's row is written before the request goes out, so a worker killed while the request is out (or
    after the receiver answered, before the outcome was written) leaves the attempt on record."""

    def test_an_attempt_whose_worker_died_is_on_record_and_marked_outcome_unknown_by_the_next(
        self, receiver, program, clock, monkeypatch
    ):
        endpoint = endpoint_to(receiver, program)
        delivery = new_delivery(program, endpoint)

        def killed(**_):
            raise WorkerKilled

        with monkeypatch.context() as patched:
            patched.setattr(delivery_module, "_record", killed)
            with pytest.raises(WorkerKilled):
                delivery_attempt(delivery_id=delivery.pk)
        assert len(receiver.requests) == 1  # the receiver had it
        (in_flight,) = WebhookAttempt.objects.filter(delivery=delivery)
        assert (in_flight.number, in_flight.in_flight, in_flight.started_at) == (1, True, NOW)

        assert delivery_attempt(delivery_id=delivery.pk) is None, "leased: no second request meanwhile"
        lease = delivery_module.LEASE_MARGIN_SECONDS + delivery_module.settings.WEBHOOK_TIMEOUT_SECONDS
        clock.move_to(NOW + timedelta(seconds=lease + 1), tick=False)
        outcome = delivery_attempt(delivery_id=delivery.pk)
        assert outcome is not None and outcome.succeeded

        first, second = WebhookAttempt.objects.filter(delivery=delivery).order_by("number")
        assert (first.in_flight, first.error, first.status_code) == (False, delivery_module.OUTCOME_UNKNOWN, None)
        assert (second.number, second.in_flight, second.succeeded, second.status_code) == (2, False, True, 200)
        assert receiver.ids() == [delivery.event.public_id] * 2, "both requests carry the same webhook-id"

    def test_an_attempt_is_in_flight_while_its_request_is_out(self, receiver, program, monkeypatch):
        endpoint = endpoint_to(receiver, program)
        delivery = new_delivery(program, endpoint)
        seen: list[tuple] = []
        send = delivery_module._send

        def watching(delivery_row, now):
            seen.extend(WebhookAttempt.objects.filter(delivery=delivery_row).values_list("number", "in_flight"))
            return send(delivery_row, now)

        monkeypatch.setattr(delivery_module, "_send", watching)
        delivery_attempt(delivery_id=delivery.pk)
        assert seen == [(1, True)]
        assert list(WebhookAttempt.objects.values_list("in_flight", "succeeded")) == [(False, True)]

    def test_leasing_and_writing_the_attempt_is_one_transaction(self, receiver, program, django_assert_num_queries):
        endpoint = endpoint_to(receiver, program)
        delivery = new_delivery(program, endpoint)
        # One transaction (a savepoint inside the test's): the lease's UPDATE, the delivery's SELECT and the
        # attempt's INSERT; after the request, another: the attempt's, the delivery's and the endpoint's UPDATEs.
        with django_assert_num_queries(10):
            delivery_attempt(delivery_id=delivery.pk)
