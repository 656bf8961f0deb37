from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from commissions.approval import commission_approve
from commissions.models import Commission, LedgerEntry, Notification
from commissions.services import (
    partner_balance,
    withdrawal_mark_paid,
    withdrawal_request,
)
from core import messages
from tests.factories import CommissionFactory, ProgramFactory, SaleFactory, credited_commission
from tests.helpers import REQUEST_LOG_ROW, run_together

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/refund"


def refund(client, program, **body):
    return client.post(URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")


def pending_commission(amount=10000, commission=2000) -> Commission:
    sale = SaleFactory(amount_cents=amount)
    return CommissionFactory.create(sale=sale, amount_cents=commission, hold_until=timezone.now() + timedelta(days=30))


@pytest.fixture
def client():
    return APIClient()


def key_for(commission: Commission) -> str:
    from programs.services import program_key_regenerate

    return program_key_regenerate(program=commission.program)


def post(client, commission, **body):
    return client.post(
        URL,
        {"transaction_id": commission.sale.processor_event_id, **body},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {key_for(commission)}",
    )


def deductions(commission) -> list[int]:
    return list(
        LedgerEntry.objects.filter(commission=commission, kind="deduction").values_list("amount_cents", flat=True)
    )


class TestPendingCommission:
    def test_a_partial_refund_cancels_it_whole_and_reports_the_share(self, client):
        commission = pending_commission()
        response = post(client, commission, refund_amount_cents=2500)
        assert response.status_code == 200
        assert response.json() == {
            "success": True,
            "status": "refunded",
            "deductionAmount": 500,
            "commission_id": commission.pk,
        }
        commission.refresh_from_db()
        assert commission.status == "refunded" and not commission.credited
        assert deductions(commission) == []  # informational only: nothing was credited

    def test_it_is_never_credited_after_its_hold(self, client):
        commission = pending_commission()
        post(client, commission, refund_amount_cents=2500)
        Commission.objects.filter(pk=commission.pk).update(hold_until=timezone.now() - timedelta(seconds=1))
        assert not commission_approve(commission_id=commission.pk)
        assert partner_balance(partner_id=commission.partner_id, currency="USD") == 0

    def test_a_full_refund_reverses_it(self, client):
        commission = pending_commission()
        response = post(client, commission)
        assert response.json() == {
            "success": True,
            "status": "reversed",
            "deductionAmount": 2000,
            "commission_id": commission.pk,
        }
        assert deductions(commission) == []


class TestApprovedCommission:
    def test_a_partial_refund_deducts_its_share_from_the_partner_in_the_same_transaction(self, client):
        commission = credited_commission()
        response = post(client, commission, refund_amount_cents=2500)
        assert response.json()["status"] == "refunded" and response.json()["deductionAmount"] == 500
        assert deductions(commission) == [-500]
        assert partner_balance(partner_id=commission.partner_id, currency="USD") == 1500

    def test_refunds_accumulate_until_the_sale_is_refunded_whole(self, client):
        commission = credited_commission()
        post(client, commission, refund_amount_cents=2500, refund_id="r1")
        second = post(client, commission, refund_amount_cents=2500, refund_id="r2").json()
        assert (second["status"], second["deductionAmount"]) == ("refunded", 500)
        last = post(client, commission, refund_amount_cents=9000, refund_id="r3").json()
        assert (last["status"], last["deductionAmount"]) == ("reversed", 1000)  # capped: only 5,000 was left
        commission.refresh_from_db()
        assert commission.sale_refunded_cents == 10000 and commission.deducted_cents == 2000
        assert sum(deductions(commission)) == -2000
        assert partner_balance(partner_id=commission.partner_id, currency="USD") == 0

    def test_a_reversed_commission_is_skipped(self, client):
        commission = credited_commission()
        post(client, commission)
        response = post(client, commission, refund_amount_cents=100)
        assert response.json() == {
            "success": True,
            "status": "skipped",
            "reason": "already reversed",
            "commission_id": commission.pk,
        }
        assert len(deductions(commission)) == 1

    def test_the_balance_may_go_negative(self, client):
        commission = credited_commission()
        LedgerEntry.objects.create(partner=commission.partner, kind="payout", amount_cents=-2000, currency="USD")
        post(client, commission)
        assert partner_balance(partner_id=commission.partner_id, currency="USD") == -2000

    def test_open_withdrawals_are_reduced_to_fit_the_balance(self, client):
        commission = credited_commission()
        older = withdrawal_request(partner=commission.partner, amount_cents=1200, currency="USD")
        newer = withdrawal_request(partner=commission.partner, amount_cents=800, currency="USD")
        post(client, commission, refund_amount_cents=5000)  # balance 2000 -> 1000
        older.refresh_from_db(), newer.refresh_from_db()
        assert (older.amount_cents, older.status) == (1000, "open")
        assert (newer.amount_cents, newer.status) == (0, "cancelled")
        assert older.requested_cents == 1200

    def test_a_paid_out_commission_warns_the_advertiser(self, client, django_capture_on_commit_callbacks):
        commission = credited_commission()
        withdrawal_mark_paid(
            withdrawal=withdrawal_request(partner=commission.partner, amount_cents=2000, currency="USD")
        )
        commission.refresh_from_db()
        assert commission.status == "paid"
        with django_capture_on_commit_callbacks(execute=True):
            post(client, commission, refund_reason="customer unhappy")
        audiences = set(Notification.objects.filter(commission=commission).values_list("audience", "kind"))
        assert audiences == {("partner", "commission_reversed"), ("advertiser", "manual_review")}
        assert partner_balance(partner_id=commission.partner_id, currency="USD") == -2000


class TestIdempotency:
    def test_a_repeated_refund_id_is_ignored(self, client):
        commission = credited_commission()
        post(client, commission, refund_amount_cents=1000, refund_id="re_1")
        response = post(client, commission, refund_amount_cents=1000, refund_id="re_1")
        assert response.json() == {
            "success": True,
            "status": "skipped",
            "reason": "refund already applied",
            "commission_id": commission.pk,
        }
        assert deductions(commission) == [-200]

    def test_different_refund_ids_with_the_same_amount_both_apply(self, client):
        commission = credited_commission()
        post(client, commission, refund_amount_cents=1000, refund_id="re_1")
        post(client, commission, refund_amount_cents=1000, refund_id="re_2")
        assert deductions(commission) == [-200, -200]

    def test_without_refund_id_the_same_amount_again_is_a_retry(self, client):
        commission = credited_commission()
        post(client, commission, refund_amount_cents=1000)
        again = post(client, commission, refund_amount_cents=1000)
        assert again.json()["status"] == "skipped"
        other = post(client, commission, refund_amount_cents=1500)
        assert other.json()["status"] == "refunded"
        assert deductions(commission) == [-200, -300]

    def test_a_full_refund_records_its_refund_id_and_a_replay_is_already_reversed(self, client):
        commission = credited_commission()
        first = post(client, commission, refund_id="re_1").json()
        assert first["status"] == "reversed"
        assert Commission.objects.get(pk=commission.pk).applied_refund_ids == ["re_1"]
        again = post(client, commission, refund_id="re_1").json()
        assert again == {
            "success": True,
            "status": "skipped",
            "reason": "already reversed",
            "commission_id": commission.pk,
        }
        assert Commission.objects.get(pk=commission.pk).applied_refund_ids == ["re_1"]
        assert deductions(commission) == [-2000]

    def test_partial_then_full_records_both_refund_ids(self, client):
        commission = credited_commission()
        post(client, commission, refund_amount_cents=1000, refund_id="re_1")
        full = post(client, commission, refund_id="re_2").json()
        assert full["status"] == "reversed" and full["deductionAmount"] == 1800
        replay = post(client, commission, refund_amount_cents=1000, refund_id="re_1").json()
        assert replay["status"] == "skipped" and replay["reason"] == "already reversed"
        assert Commission.objects.get(pk=commission.pk).applied_refund_ids == ["re_1", "re_2"]
        assert deductions(commission) == [-200, -1800]

    def test_the_id_does_not_skip_a_full_refund(self, client):
        """The spec: refund_id is "ignored when the amount is omitted or 0" for the replay rule; a full refund
        carrying the id of an earlier partial one reverses the rest, and the id is listed once."""
        commission = credited_commission()
        post(client, commission, refund_amount_cents=1000, refund_id="re_1")
        full = post(client, commission, refund_id="re_1").json()
        assert full["status"] == "reversed"
        assert Commission.objects.get(pk=commission.pk).applied_refund_ids == ["re_1"]


class TestReasons:
    def test_refund_reason_is_recorded(self, client):
        commission = pending_commission()
        post(client, commission, refund_reason="Damaged item", reason="chargeback")
        assert Commission.objects.get(pk=commission.pk).refund_reason == "Damaged item"

    @pytest.mark.parametrize("refund_reason", [None, "", "   "])
    def test_reason_is_used_when_refund_reason_is_absent_or_empty(self, client, refund_reason):
        commission = pending_commission()
        body = {"reason": "chargeback"}
        if refund_reason is not None:
            body["refund_reason"] = refund_reason
        post(client, commission, **body)
        assert Commission.objects.get(pk=commission.pk).refund_reason == "chargeback"


class TestOtherAnswers:
    def test_a_sale_without_commission(self, client):
        sale = SaleFactory()
        program = ProgramFactory._meta.model.objects.get(pk=sale.program_id)
        from programs.services import program_key_regenerate

        key = program_key_regenerate(program=program)
        response = client.post(
            URL,
            {"transaction_id": sale.processor_event_id},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert response.json() == {
            "success": True,
            "status": "no_commission",
            "message": messages.REFUND_NO_COMMISSION,
        }

    def test_a_test_key_is_answered_before_the_body_is_checked(self, client):
        program = ProgramFactory()
        response = client.post(
            URL,
            {"reason": "nonsense"},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {program.raw_test_api_key}",
        )
        assert response.status_code == 200
        assert response.json() == {"success": True, "test": True}

    def test_another_programs_sale_is_not_found(self, client):
        commission = credited_commission()
        other = ProgramFactory()
        response = refund(client, other, transaction_id=commission.sale.processor_event_id)
        assert response.status_code == 404
        assert response.json() == {
            "data": None,
            "error": {
                "status": 404,
                "name": "NotFoundError",
                "message": messages.REFUND_SALE_NOT_FOUND,
                "details": {},
                "code": "not_found",
            },
        }
        assert deductions(commission) == []


class TestErrors:
    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, messages.REFUND_TRANSACTION_ID_REQUIRED),
            ({"transaction_id": 123}, messages.REFUND_TRANSACTION_ID_REQUIRED),
            ({"transaction_id": ""}, messages.REFUND_TRANSACTION_ID_REQUIRED),
            ({"transaction_id": "t", "reason": "fraud"}, messages.REFUND_REASON_INVALID),
        ],
    )
    def test_bad_bodies(self, client, body, message):
        program = ProgramFactory()
        response = refund(client, program, **body)
        assert response.status_code == 400
        assert response.json()["error"] == {
            "status": 400,
            "name": "BadRequestError",
            "message": message,
            "details": {},
            "code": "invalid_request",
        }

    @pytest.mark.parametrize("amount", [-1, "100", 1.5, True])
    def test_a_bad_amount_changes_nothing(self, client, amount):
        commission = credited_commission()
        response = post(client, commission, refund_amount_cents=amount)
        assert response.status_code == 400
        assert Commission.objects.get(pk=commission.pk).status == "approved"

    @pytest.mark.parametrize(
        ("header", "message"),
        [
            (None, messages.MISSING_AUTH_HEADER),
            ("Bearer ", messages.INVALID_API_TOKEN),
            ("Bearer aff_nope", messages.INVALID_API_TOKEN),
        ],
    )
    def test_401s(self, client, header, message):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        response = client.post(URL, {"transaction_id": "x"}, format="json", **extra)
        assert response.status_code == 401
        assert response.json()["error"]["message"] == message
        assert response.json()["error"]["code"] == "unauthorized"

    def test_an_unexpected_failure_is_a_500_and_rolls_back(self, client, monkeypatch):
        commission = credited_commission()

        def boom(*args, **kwargs):
            raise RuntimeError("ledger down")

        monkeypatch.setattr("commissions.services.withdrawals_fit_balance", boom)
        response = post(client, commission, refund_amount_cents=2500)
        assert response.status_code == 500
        assert response.json()["error"]["message"] == messages.REFUND_TRACKING_FAILED
        assert response.json()["error"]["code"] == "internal_error"
        commission.refresh_from_db()
        assert commission.status == "approved" and commission.sale_refunded_cents == 0
        assert deductions(commission) == []


def test_notifications_never_change_the_response(client, monkeypatch):
    commission = credited_commission()

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr("commissions.tasks.notification_outbox_deliver_task.apply_async", broker_down)
    response = post(client, commission, refund_amount_cents=2500)
    assert response.status_code == 200 and response.json()["status"] == "refunded"
    assert deductions(commission) == [-500]


def test_the_partner_is_notified_once_per_refund(client, django_capture_on_commit_callbacks):
    commission = credited_commission()
    with django_capture_on_commit_callbacks(execute=True):
        post(client, commission, refund_amount_cents=2500, refund_reason="late delivery")
    [notice] = Notification.objects.filter(commission=commission)
    assert (notice.audience, notice.kind, notice.partner_id) == (
        "partner",
        "commission_refunded",
        commission.partner_id,
    )
    assert "late delivery" in notice.message
    from commissions.outbox import refund_notifications_create

    assert refund_notifications_create(commission_id=commission.pk, step=1, was_paid_out=False) == 0  # a retried task


def test_refund_query_count(client, django_assert_num_queries):
    commission = credited_commission()
    key = key_for(commission)
    body = {"transaction_id": commission.sale.processor_event_id, "refund_amount_cents": 2500}
    # 1 key lookup (program joined), 2 sale lookup, 3 SAVEPOINT (the refund's transaction; BEGIN outside
    # tests), 4 commission SELECT ... FOR UPDATE, 5 commission UPDATE, 6 whether the program has a milestone bonus
    # the refund could take back (none: tiers.milestones reads no more), 7 partner row lock, 8 ledger INSERT,
    # 9 payouts not sent yet SELECT ... FOR UPDATE (none: nothing to reduce), 10 balance SUM, 11 open withdrawals
    # SELECT ... FOR UPDATE, 12 a payout covering the commission that left, SELECT ... FOR UPDATE (none: no warning
    # to the advertiser), 13 notification outbox INSERT, 14 webhook event INSERT (commission.refunded), 15 webhook
    # event INSERT (refund.applied), 16 RELEASE SAVEPOINT (COMMIT). The notification is delivered, and the events
    # fanned out, after commit, which a test transaction never reaches.
    with django_assert_num_queries(16 + REQUEST_LOG_ROW):
        response = client.post(URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_partial_refunds_deduct_exactly_the_refunded_share():
    commission = credited_commission(amount=10000, commission=2000)
    key = key_for(commission)

    def send(n: int) -> int:
        response = APIClient().post(
            URL,
            {
                "transaction_id": commission.sale.processor_event_id,
                "refund_amount_cents": 700,
                "refund_id": f"re_{n}",
            },
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        return response.status_code

    statuses = run_together(10, send)
    assert statuses == [200] * 10
    commission.refresh_from_db()
    assert commission.sale_refunded_cents == 7000
    assert commission.deducted_cents == 1400
    assert sum(deductions(commission)) == -1400
    assert len(deductions(commission)) == 10
    assert partner_balance(partner_id=commission.partner_id, currency="USD") == 600
    assert sorted(commission.applied_refund_ids) == sorted(f"re_{n}" for n in range(10))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_same_full_refund_twice_at_once_reverses_once_and_records_its_id_once():
    commission = credited_commission(amount=10000, commission=2000)
    key = key_for(commission)

    def send(n: int) -> dict:
        response = APIClient().post(
            URL,
            {"transaction_id": commission.sale.processor_event_id, "refund_id": "re_full"},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert response.status_code == 200
        return response.json()

    answers = run_together(2, send)
    assert sorted(answer["status"] for answer in answers) == ["reversed", "skipped"]
    assert [answer["reason"] for answer in answers if answer["status"] == "skipped"] == ["already reversed"]
    commission.refresh_from_db()
    assert commission.status == "reversed" and commission.refund_count == 1
    assert commission.applied_refund_ids == ["re_full"]
    assert deductions(commission) == [-2000]
    assert partner_balance(partner_id=commission.partner_id, currency="USD") == 0
