"""Refund notifications survive a broker outage: the refund writes an outbox row in its own transaction, the
on-commit task delivers it, and the sweep (beat, `deliver_notifications`, the admin action) delivers whatever
the task could not, exactly once."""

import logging
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from commissions.models import Commission, Notification, NotificationOutbox
from commissions.outbox import notification_outbox_deliver, notification_outbox_deliver_pending
from commissions.services import withdrawal_mark_paid, withdrawal_request
from commissions.tasks import notification_outbox_deliver_pending_task
from config import celery_app
from core import messages
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, credited_commission
from tests.helpers import run_together
from tests.stripe_payloads import ACCOUNT, charge_refunded, checkout_session, event, post_event
from tests.worker import wait_for
from tracking.models import ProcessorEvent

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/refund"


def paid_out_commission() -> Commission:
    commission = credited_commission()
    withdrawal_mark_paid(withdrawal=withdrawal_request(partner=commission.partner, amount_cents=2000, currency="USD"))
    commission.refresh_from_db()
    assert commission.status == "paid"
    return commission


def refund(commission: Commission, **body):
    from programs.services import program_key_regenerate

    key = program_key_regenerate(program=commission.program)
    assert commission.sale is not None
    return APIClient().post(
        URL,
        {"transaction_id": commission.sale.processor_event_id, **body},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )


def full_refund(payment_intent: str) -> dict[str, Any]:
    return event(
        "charge.refunded", charge_refunded(payment_intent=payment_intent, amount=10000, refunds=[("re_1", 10000)])
    )


def notices(commission: Commission) -> list[tuple[str, str]]:
    return sorted(Notification.objects.filter(commission=commission).values_list("audience", "kind"))


class TestOnCommit:
    def test_a_refund_writes_its_outbox_row_and_the_task_delivers_it(self, django_capture_on_commit_callbacks):
        commission = credited_commission()
        with django_capture_on_commit_callbacks(execute=True):
            response = refund(commission, refund_amount_cents=2500, refund_reason="late")
        assert response.status_code == 200
        row = NotificationOutbox.objects.get()
        assert (row.commission_id, row.refund_step, row.was_paid_out, row.reversed) == (commission.pk, 1, False, False)
        assert row.delivered_at is not None and row.attempts == 1
        assert notices(commission) == [("partner", "commission_refunded")]

    def test_a_refund_that_fails_leaves_no_outbox_row(self, monkeypatch):
        commission = credited_commission()

        def boom(**kwargs):
            raise RuntimeError("balance check failed")

        monkeypatch.setattr("commissions.services.withdrawals_fit_balance", boom)
        response = refund(commission, refund_amount_cents=2500)
        assert response.status_code == 500
        assert response.json()["error"]["message"] == messages.REFUND_TRACKING_FAILED
        assert not NotificationOutbox.objects.exists() and not Notification.objects.exists()

    def test_a_skipped_refund_writes_no_outbox_row(self, django_capture_on_commit_callbacks):
        commission = credited_commission()
        with django_capture_on_commit_callbacks(execute=True):
            refund(commission, refund_amount_cents=1000, refund_id="re_1")
            again = refund(commission, refund_amount_cents=1000, refund_id="re_1")
        assert again.json()["status"] == "skipped"
        assert NotificationOutbox.objects.count() == 1 and Notification.objects.count() == 1


class TestBrokerDown:
    def test_the_refund_answers_200_keeps_its_row_and_the_command_delivers_it_once(
        self, broker_down, caplog, django_capture_on_commit_callbacks
    ):
        commission = paid_out_commission()
        with caplog.at_level(logging.ERROR, logger="svc.tasks"):
            with django_capture_on_commit_callbacks(execute=True):
                response = refund(commission, refund_reason="damaged")
        assert response.status_code == 200 and response.json()["status"] == "reversed"
        assert any(message.startswith("task.enqueue_failed:") for message in caplog.messages)
        row = NotificationOutbox.objects.get()
        assert row.delivered_at is None and row.was_paid_out and row.reversed
        assert not Notification.objects.exists()

        call_command("deliver_notifications", stdout=(out := StringIO()))
        assert "Delivered 1 notification outbox row(s); 0 still undelivered." in out.getvalue()
        assert notices(commission) == [("advertiser", "manual_review"), ("partner", "commission_reversed")]
        assert all("damaged" in n.message for n in Notification.objects.all())
        call_command("deliver_notifications", stdout=(out := StringIO()))
        assert "Delivered 0" in out.getvalue() and Notification.objects.count() == 2
        row.refresh_from_db()
        assert row.delivered_at is not None and row.attempts == 1

    def test_a_late_delivery_describes_each_refund_as_it_was(self, broker_down, django_capture_on_commit_callbacks):
        commission = credited_commission()
        with django_capture_on_commit_callbacks(execute=True):
            refund(commission, refund_amount_cents=2500, refund_reason="first")
            refund(commission, refund_reason="second")  # the rest: reversed
        assert notification_outbox_deliver_pending() == 2
        first, second = Notification.objects.order_by("dedupe_key")
        assert (first.kind, second.kind) == ("commission_refunded", "commission_reversed")
        assert "reduced by a partial refund" in first.message and "first" in first.message
        assert "reversed" in second.message and "second" in second.message


def test_a_failed_delivery_is_recorded_and_retried_by_the_next_sweep(monkeypatch, caplog):
    commission = credited_commission()
    with monkeypatch.context() as patched:
        patched.setattr("commissions.tasks.notification_outbox_deliver_task.apply_async", lambda *a, **k: None)
        refund(commission, refund_amount_cents=2500)
    row = NotificationOutbox.objects.get()

    def down(**kwargs):
        raise ConnectionError("notification store unavailable")

    with monkeypatch.context() as patched:
        patched.setattr("commissions.outbox.refund_notifications_create", down)
        with caplog.at_level(logging.ERROR, logger="svc.commissions"):
            assert notification_outbox_deliver_pending() == 0
    assert "outbox.delivery_failed" in caplog.messages
    row.refresh_from_db()
    assert row.delivered_at is None and row.attempts == 1
    assert row.last_error == "ConnectionError: notification store unavailable"
    assert notification_outbox_deliver_pending() == 1
    row.refresh_from_db()
    assert row.delivered_at is not None and row.attempts == 2 and row.last_error == ""
    assert notices(commission) == [("partner", "commission_refunded")]


@pytest.mark.usefixtures("stripe_webhook_secret")
class TestStripeRefunds:
    @pytest.fixture
    def link(self):
        return ReferralLinkFactory(program=ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0))

    def paid(self, client, link, django_capture_on_commit_callbacks) -> tuple[str, Commission]:
        customer = CustomerFactory(link=link)
        session = checkout_session(amount=10000, metadata={"svc_click_id": customer.click_id})
        with django_capture_on_commit_callbacks(execute=True):
            post_event(client, event("checkout.session.completed", session))
        return session["payment_intent"], Commission.objects.get()

    def test_a_refund_event_keeps_its_notifications_through_a_broker_outage(
        self, client, link, monkeypatch, django_capture_on_commit_callbacks
    ):
        payment_intent, commission = self.paid(client, link, django_capture_on_commit_callbacks)

        def broker_unreachable(*args, **kwargs):
            raise ConnectionError("broker unreachable")

        monkeypatch.setattr("commissions.tasks.notification_outbox_deliver_task.apply_async", broker_unreachable)
        payload = full_refund(payment_intent)
        with django_capture_on_commit_callbacks(execute=True):
            assert post_event(client, payload).status_code == 200
        assert ProcessorEvent.objects.get(event_id=payload["id"]).status == "processed"
        assert NotificationOutbox.objects.filter(commission=commission, delivered_at__isnull=True).count() == 1
        assert not Notification.objects.exists()
        assert notification_outbox_deliver_pending() == 1
        assert notices(commission) == [("partner", "commission_reversed")]

    def test_a_refund_event_that_rolls_back_leaves_no_outbox_row(
        self, client, link, monkeypatch, django_capture_on_commit_callbacks
    ):
        payment_intent, commission = self.paid(client, link, django_capture_on_commit_callbacks)

        def boom(**kwargs):
            raise RuntimeError("balance check failed")

        monkeypatch.setattr("commissions.services.withdrawals_fit_balance", boom)
        payload = full_refund(payment_intent)
        with django_capture_on_commit_callbacks(execute=True):
            post_event(client, payload)
        assert ProcessorEvent.objects.get(event_id=payload["id"]).status == "failed"
        commission.refresh_from_db()
        assert commission.status == "approved"
        assert not NotificationOutbox.objects.exists()


class TestAdmin:
    @pytest.fixture
    def operator_client(self, client):
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123")
        client.force_login(user)
        return client

    def undelivered_row(self, monkeypatch) -> NotificationOutbox:
        commission = credited_commission()
        with monkeypatch.context() as patched:
            patched.setattr("commissions.tasks.notification_outbox_deliver_task.apply_async", lambda *a, **k: None)
            refund(commission, refund_amount_cents=2500)
        return NotificationOutbox.objects.get(commission=commission)

    def test_it_lists_undelivered_rows_and_delivers_them_on_request(self, operator_client, monkeypatch):
        waiting = self.undelivered_row(monkeypatch)
        delivered = self.undelivered_row(monkeypatch)
        assert notification_outbox_deliver(outbox_id=delivered.pk)
        listing = operator_client.get("/admin/commissions/notificationoutbox/?delivery=undelivered")
        assert listing.status_code == 200
        assert list(listing.context["cl"].queryset) == [waiting]
        response = operator_client.post(
            "/admin/commissions/notificationoutbox/",
            {"action": "deliver_now", "_selected_action": [waiting.pk, delivered.pk]},
            follow=True,
        )
        assert "Delivered 1 row(s); 0 failed." in response.content.decode()
        waiting.refresh_from_db()
        assert waiting.delivered_at is not None
        assert Notification.objects.count() == 2


def test_the_beat_schedule_names_registered_tasks(settings):
    celery_app.loader.import_default_modules()  # autodiscovers every app's tasks, as a worker does

    names = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"commissions.deliver_pending_notifications", "commissions.reconcile"} <= names
    assert names <= set(celery_app.tasks)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_sweeps_deliver_each_row_once(monkeypatch):
    commissions = [credited_commission() for _ in range(12)]
    with monkeypatch.context() as patched:
        patched.setattr("commissions.tasks.notification_outbox_deliver_task.apply_async", lambda *a, **k: None)
        for commission in commissions:
            assert refund(commission, refund_amount_cents=2500).status_code == 200
    delivered = run_together(4, lambda n: notification_outbox_deliver_pending(batch_size=5))
    assert sum(delivered) == 12
    assert set(NotificationOutbox.objects.values_list("attempts", flat=True)) == {1}
    assert Notification.objects.count() == 12


@pytest.mark.postgres
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_with_redis_down_the_refund_is_kept_and_a_real_worker_delivers_it_once_redis_is_back(
    broker_down, request, caplog
):
    commission = paid_out_commission()
    with caplog.at_level(logging.ERROR, logger="svc.tasks"):
        response = refund(commission, refund_amount_cents=5000, refund_reason="broken")
    assert response.status_code == 200 and response.json()["status"] == "refunded"
    assert any(message.startswith("task.enqueue_failed:") for message in caplog.messages)
    row = NotificationOutbox.objects.get()
    assert row.delivered_at is None and not Notification.objects.exists()

    broker_down()  # the broker is back
    request.getfixturevalue("celery_worker_process")
    notification_outbox_deliver_pending_task.delay()
    assert wait_for(lambda: NotificationOutbox.objects.filter(pk=row.pk, delivered_at__isnull=False).exists())
    assert notices(commission) == [("advertiser", "manual_review"), ("partner", "commission_refunded")]
    assert all("broken" in n.message for n in Notification.objects.all())

    assert notification_outbox_deliver_pending() == 0  # a later sweep finds nothing to send
    row.refresh_from_db()
    assert row.attempts == 1 and Notification.objects.count() == 2
