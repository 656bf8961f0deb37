"""Every event type is written, with its envelope and data, by the change that causes it, through the HTTP API
where one exists; a change that rolls back writes no event."""

from datetime import timedelta
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from commissions.approval import commissions_approve_due
from commissions.models import Commission
from programs.models import PartnerProgram
from tests.agent_api.conftest import agent_for
from tests.factories import CustomerFactory, PartnerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer
from tracking.models import LeadEvent, SaleEvent
from webhooks.events import event_emit
from webhooks.fanout import webhooks_sweep
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

SALE_URL = "/api/v1/track/sale"
LEAD_URL = "/api/v1/track/lead"
REFUND_URL = "/api/v1/track/refund"
ENVELOPE_KEYS = {"id", "type", "created_at", "program_id", "livemode", "data"}


def envelopes(type: str | None = None) -> list[dict[str, Any]]:
    events = WebhookEvent.objects.order_by("pk")
    if type is not None:
        events = events.filter(type=type)
    return [event.payload() for event in events]


def types() -> list[str]:
    return list(WebhookEvent.objects.order_by("pk").values_list("type", flat=True))


def assert_envelope(envelope: dict[str, Any], *, type: str, program_id: int, livemode: bool = True) -> dict[str, Any]:
    assert set(envelope) == ENVELOPE_KEYS
    assert envelope["id"].startswith("evt_") and len(envelope["id"]) > 10
    assert (envelope["type"], envelope["program_id"], envelope["livemode"]) == (type, program_id, livemode)
    assert envelope["created_at"].endswith("Z")
    return envelope["data"]


@pytest.fixture
def program():
    return ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link, customer_key="user_1", customer_status="lead")


def post_sale(program, key: str | None = None, **fields):
    body = {"transaction_id": "txn_1", "amount_cents": 10000, "customer_key": "user_1", **fields}
    return APIClient().post(SALE_URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {key or program.raw_api_key}")


def post_refund(program, **body):
    return APIClient().post(REFUND_URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")


class TestSale:
    def test_it_announces_an_attributed_sale_and_its_commission(self, program, customer):
        response = post_sale(program)
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        commission = Commission.objects.get()
        assert types() == ["sale.created", "commission.created"]

        sale_event, commission_event = envelopes()
        data = assert_envelope(sale_event, type="sale.created", program_id=program.pk)
        assert data["id"] == sale.pk == response.json()["sale_id"]
        assert (data["transaction_id"], data["amount_cents"], data["currency"]) == ("txn_1", 10000, "USD")
        assert (data["attributed"], data["partner_id"], data["customer_id"]) == (
            True,
            customer.first_partner_id,
            customer.pk,
        )
        assert data["click_id"] == customer.click_id

        data = assert_envelope(commission_event, type="commission.created", program_id=program.pk)
        assert data["id"] == commission.pk == response.json()["commission_id"]
        assert (data["sale_id"], data["amount_cents"], data["status"]) == (sale.pk, 2000, "pending")
        assert data["approved_at"] is None and data["hold_until"] is not None

    def test_it_announces_an_unattributed_sale_stored_without_commission(self, program, link):
        orphan = CustomerFactory(link=link, first_partner=None, customer_key="orphan")
        response = post_sale(program, customer_key="orphan")
        assert response.status_code == 400 and response.json()["error"]["code"] == "no_attribution"
        assert types() == ["sale.created"]
        data = assert_envelope(envelopes()[0], type="sale.created", program_id=program.pk)
        assert (data["attributed"], data["partner_id"], data["customer_id"]) == (False, None, orphan.pk)
        assert data["id"] == SaleEvent.objects.get().pk
        assert post_sale(program, customer_key="orphan").status_code == 409
        assert types() == ["sale.created"]

    @pytest.mark.parametrize("use_test_key", [True, False])
    def test_a_test_sale_is_announced_in_test_mode_only(self, program, customer, use_test_key):
        if use_test_key:
            response = post_sale(program, key=program.raw_test_api_key)
        else:
            response = post_sale(program, additional_data={"test_mode": True})
        assert response.status_code == 200
        assert types() == ["sale.created"]
        data = assert_envelope(envelopes()[0], type="sale.created", program_id=program.pk, livemode=False)
        assert data["id"] == SaleEvent.objects.get(is_test=True).pk

    def test_a_commission_approved_at_once_is_announced_created_then_approved(self, program, customer):
        program.hold_days = 0
        program.save()
        post_sale(program)
        commission = Commission.objects.get()
        assert commission.status == "approved"
        assert types() == ["sale.created", "commission.created", "commission.approved"]
        created, approved = envelopes("commission.created")[0], envelopes("commission.approved")[0]
        assert assert_envelope(created, type="commission.created", program_id=program.pk)["id"] == commission.pk
        data = assert_envelope(approved, type="commission.approved", program_id=program.pk)
        assert (data["id"], data["status"]) == (commission.pk, "approved")
        assert data["approved_at"] is not None

    def test_a_duplicate_sale_409_writes_no_second_event(self, program, customer):
        assert post_sale(program).status_code == 200
        assert post_sale(program).status_code == 409
        assert types() == ["sale.created", "commission.created"]


class TestLead:
    def test_a_server_lead_is_announced(self, program, link):
        customer = CustomerFactory(link=link)
        response = APIClient().post(
            LEAD_URL,
            {"click_id": customer.click_id, "customer_key": "user-42", "email": "ada@example.com"},
            format="json",
            **bearer(program.raw_api_key),
        )
        assert response.status_code == 200
        lead = LeadEvent.objects.get()
        data = assert_envelope(envelopes()[0], type="lead.created", program_id=program.pk)
        assert types() == ["lead.created"]
        assert data == {
            "id": lead.pk,
            "customer_id": customer.pk,
            "partner_id": link.partner_id,
            "click_id": customer.click_id,
            "customer_key": "user-42",
            "email": "ada@example.com",
            "server_confirmed": True,
            "created_at": data["created_at"],
        }

    def test_a_test_lead_is_announced_in_test_mode(self, program, link):
        customer = CustomerFactory(link=link)
        response = APIClient().post(
            LEAD_URL, {"click_id": customer.click_id}, format="json", **bearer(program.raw_test_api_key)
        )
        assert response.status_code == 200
        assert_envelope(envelopes()[0], type="lead.created", program_id=program.pk, livemode=False)

    def test_a_provisional_lead_is_announced_only_once_it_settles(self):
        program = ProgramFactory(lead_auth="server_required")
        customer = CustomerFactory(link=ReferralLinkFactory(program=program))
        body = {"click_id": customer.click_id, "customer_key": "user-42"}
        assert APIClient().post(LEAD_URL, body, format="json").json()["provisional"] is True
        assert types() == []

        response = APIClient().post(LEAD_URL, body, format="json", **bearer(program.raw_api_key))
        assert response.status_code == 200
        data = assert_envelope(envelopes()[0], type="lead.created", program_id=program.pk)
        assert types() == ["lead.created"]
        assert (data["id"], data["customer_key"], data["server_confirmed"]) == (
            LeadEvent.objects.get().pk,
            "user-42",
            True,
        )

    def test_a_lead_that_rolls_back_writes_no_event(self, program, link):
        customer = CustomerFactory(link=link)

        def emit_then_fail(**fields):
            event_emit(**fields)  # the event's row is written, then the lead's transaction fails
            raise RuntimeError("boom")

        with mock.patch("tracking.services.lead.event_emit", side_effect=emit_then_fail):
            response = APIClient().post(
                LEAD_URL, {"click_id": customer.click_id}, format="json", **bearer(program.raw_api_key)
            )
        assert response.status_code == 500
        assert not LeadEvent.objects.exists()
        assert types() == []


class TestCommissionLifecycle:
    def test_the_hold_job_announces_the_approval(self, program, customer):
        post_sale(program)
        commission = Commission.objects.get()
        assert commissions_approve_due(now=timezone.now() + timedelta(days=31)) == 1
        data = assert_envelope(envelopes("commission.approved")[0], type="commission.approved", program_id=program.pk)
        assert (data["id"], data["status"]) == (commission.pk, "approved")
        assert types() == ["sale.created", "commission.created", "commission.approved"]

    def test_an_early_approval_through_the_agent_api_is_announced(self, program, customer):
        post_sale(program)
        commission = Commission.objects.get()
        agent = agent_for(program.workspace)
        response = agent.client.post(f"/api/agent/v1/commissions/{commission.pk}/approve", {}, format="json")
        assert response.status_code == 200
        data = assert_envelope(envelopes("commission.approved")[0], type="commission.approved", program_id=program.pk)
        assert (data["id"], data["status"]) == (commission.pk, "approved")

    def test_a_void_through_the_agent_api_is_announced_as_reversed(self, program, customer):
        post_sale(program)
        commission = Commission.objects.get()
        agent = agent_for(program.workspace)
        response = agent.client.post(
            f"/api/agent/v1/commissions/{commission.pk}/void", {"reason": "fraud"}, format="json"
        )
        assert response.status_code == 200
        assert types() == ["sale.created", "commission.created", "commission.reversed"]
        data = assert_envelope(envelopes("commission.reversed")[0], type="commission.reversed", program_id=program.pk)
        assert (data["id"], data["status"], data["voided"], data["void_reason"]) == (
            commission.pk,
            "reversed",
            True,
            "fraud",
        )

    def test_a_partial_refund_is_announced_as_refunded_and_applied(self, program, customer):
        program.hold_days = 0
        program.save()
        post_sale(program)
        commission = Commission.objects.get()
        response = post_refund(
            program, transaction_id="txn_1", refund_amount_cents=2500, refund_id="re_1", refund_reason="damaged"
        )
        assert response.status_code == 200 and response.json()["status"] == "refunded"
        assert types()[-2:] == ["commission.refunded", "refund.applied"]
        data = assert_envelope(envelopes("commission.refunded")[0], type="commission.refunded", program_id=program.pk)
        assert (data["id"], data["status"], data["sale_refunded_cents"], data["deducted_cents"]) == (
            commission.pk,
            "refunded",
            2500,
            500,
        )
        applied = assert_envelope(envelopes("refund.applied")[0], type="refund.applied", program_id=program.pk)
        assert applied == {
            "sale_id": commission.sale_id,
            "commission_id": commission.pk,
            "refund_id": "re_1",
            "amount_cents": 2500,
            "currency": "USD",
            "sale_refunded_cents": 2500,
            "deduction_cents": 500,
            "commission_status": "refunded",
            "reason": "damaged",
        }

    def test_a_full_refund_is_announced_as_reversed_and_applied(self, program, customer):
        post_sale(program)
        commission = Commission.objects.get()
        response = post_refund(program, transaction_id="txn_1")
        assert response.status_code == 200 and response.json()["status"] == "reversed"
        assert types()[-2:] == ["commission.reversed", "refund.applied"]
        data = assert_envelope(envelopes("commission.reversed")[0], type="commission.reversed", program_id=program.pk)
        assert (data["id"], data["status"], data["voided"]) == (commission.pk, "reversed", False)
        applied = assert_envelope(envelopes("refund.applied")[0], type="refund.applied", program_id=program.pk)
        assert (applied["amount_cents"], applied["commission_status"]) == (None, "reversed")

    def test_a_refund_skipped_as_already_applied_writes_no_event(self, program, customer):
        post_sale(program)
        post_refund(program, transaction_id="txn_1", refund_amount_cents=1000, refund_id="re_1")
        before = types()
        response = post_refund(program, transaction_id="txn_1", refund_amount_cents=1000, refund_id="re_1")
        assert response.status_code == 200
        assert types() == before

    def test_a_refund_that_rolls_back_after_its_first_event_writes_none(self, program, customer):
        post_sale(program)
        # refund.applied's data is built after commission.refunded's row is written: failing there rolls it back.
        with mock.patch("commissions.services.refund_data", side_effect=RuntimeError("boom")):
            response = post_refund(program, transaction_id="txn_1", refund_amount_cents=2500)
        assert response.status_code == 500
        assert types() == ["sale.created", "commission.created"]
        assert Commission.objects.get().status == "pending"


class TestEnrolment:
    def test_enrolling_through_the_agent_api_is_announced_once(self, program):
        partner = PartnerFactory(workspace=program.workspace, name="Ada", email="ada@example.com")
        agent = agent_for(program.workspace)
        path = f"/api/agent/v1/partners/{partner.pk}/enrollments"
        assert agent.client.post(path, {"program_id": program.pk}, format="json").status_code == 201
        assert agent.client.post(path, {"program_id": program.pk}, format="json").status_code == 200
        assert types() == ["partner.enrolled"]
        data = assert_envelope(envelopes()[0], type="partner.enrolled", program_id=program.pk)
        enrolment = PartnerProgram.objects.get(partner=partner, program=program)
        assert data == {
            "id": enrolment.pk,
            "partner_id": partner.pk,
            "name": "Ada",
            "email": "ada@example.com",
            "enrolled_at": data["enrolled_at"],
        }


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_sale_and_commission_statements_write_their_events_with_their_ids(link):
    # A sale posted on its own is inserted with its event by one statement on PostgreSQL (core.sql.insert_family),
    # the commission likewise: the events' ids are the rows' own.
    program = link.program
    program.hold_days = 0
    program.save()
    CustomerFactory(link=link, customer_key="user_1", customer_status="lead")
    response = post_sale(program)
    assert response.status_code == 200
    sale, commission = SaleEvent.objects.get(), Commission.objects.get()
    assert types() == ["sale.created", "commission.created", "commission.approved"]
    assert [envelope["data"]["id"] for envelope in envelopes()] == [sale.pk, commission.pk, commission.pk]
    assert envelopes("commission.approved")[0]["data"]["status"] == "approved"
    # No endpoint wants them: nothing is queued per event, and the sweep fans all three out in one batch.
    assert WebhookEvent.objects.filter(fanned_out_at__isnull=True).count() == 3
    webhooks_sweep()
    assert WebhookEvent.objects.filter(fanned_out_at__isnull=False).count() == 3
