"""POST /api/tracking/run-verification/:programId, POST /api/tracking/test and
POST /api/tracking/check-test-events: test-mode traffic from the dashboard, and a check that an
integrator's own test calls arrived."""

from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest

from commissions.models import Commission
from programs.models import PartnerProgram, ProgramKey
from tests.factories import CustomerFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bad_request
from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent
from tracking.rollups import rollups_update

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="summer")


def nothing_real_changed(link) -> bool:
    rollups_update(settle=timedelta(0))  # the counters as the rollup run leaves them (it adds clicks and sales)
    metrics = PartnerProgram.objects.get(partner=link.partner, program=link.program)
    return (
        not Customer.objects.filter(is_test=False).exists()
        and not Commission.objects.exists()
        and (metrics.clicks, metrics.leads, metrics.sales, metrics.revenue_cents) == (0, 0, 0, 0)
        and not ClickEvent.objects.filter(is_test=False).exists()
    )


class TestRunVerification:
    def url(self, program) -> str:
        return f"/api/tracking/run-verification/{program.pk}"

    def test_it_runs_the_chain_in_test_mode_and_answers_each_step(self, owner, program, link):
        response = owner.post(self.url(program), HTTP_X_REQUEST_ID="verify-req-0001")
        assert response.status_code == 200
        data = response.json()["data"]
        click, lead, sale = ClickEvent.objects.get(), LeadEvent.objects.get(), SaleEvent.objects.get()
        assert data["success"] is True
        assert data["program_id"] == program.pk
        assert data["steps"] == [
            {"step": "click", "ok": True, "event_id": click.pk},
            {"step": "lead", "ok": True, "event_id": lead.pk},
            {"step": "sale", "ok": True, "event_id": sale.pk},
        ]
        assert data["click_id"] == click.click_id
        assert click.is_test and lead.is_test and sale.is_test
        assert nothing_real_changed(link)
        assert response["X-Request-ID"] == "verify-req-0001"

    def test_a_failing_step_is_reported_with_200(self, owner, program):
        response = owner.post(self.url(program))
        assert response.status_code == 200
        data = response.json()["data"]
        assert data["success"] is False
        assert data["steps"] == [{"step": "click", "ok": False, "message": "No active referral link with a partner"}]
        assert not ClickEvent.objects.exists()

    def test_a_member_is_refused(self, sign_in, program, link):
        response = sign_in(program, "member").post(self.url(program))
        assert response.status_code == 403
        assert not ClickEvent.objects.exists()

    def test_get_is_405(self, owner, program):
        assert owner.get(self.url(program)).status_code == 405


class TestSendTestEvent:
    URL = "/api/tracking/test"

    def send(self, client, program, headers: dict[str, Any] | None = None, **body):
        return client.post(self.URL, {"program_id": program.pk, **body}, format="json", **(headers or {}))

    def test_a_click_goes_through_the_click_service_in_test_mode(self, owner, program, link):
        headers = {"HTTP_USER_AGENT": "Mozilla/5.0 (iPhone)", "REMOTE_ADDR": "10.1.2.3"}
        response = self.send(owner, program, headers, event_type="click")
        assert response.status_code == 200
        click = ClickEvent.objects.get()
        assert response.json() == {
            "data": {
                "event_type": "click",
                "event_id": click.pk,
                "program_id": program.pk,
                "test_mode": True,
                "message": "Test click recorded",
                "click_id": click.click_id,
            }
        }
        assert click.is_test and click.customer.is_test
        assert click.link_id == link.pk
        assert click.page_url == "https://" + program.domain + "/"
        assert click.user_agent == "Mozilla/5.0 (iPhone)"  # the dashboard user's browser, as a real click
        assert nothing_real_changed(link)

    def test_a_lead_without_a_click_id_makes_its_test_click_first(self, owner, program, link):
        response = self.send(owner, program, event_type="lead")
        assert response.status_code == 200
        data = response.json()["data"]
        click, lead = ClickEvent.objects.get(), LeadEvent.objects.get()
        assert data == {
            "event_type": "lead",
            "event_id": lead.pk,
            "program_id": program.pk,
            "test_mode": True,
            "message": "Test lead recorded",
            "click_id": click.click_id,
            "click_event_id": click.pk,
            "customer_key": lead.customer_key,
        }
        assert lead.is_test and lead.customer_key.startswith("test_")
        assert nothing_real_changed(link)

    def test_click_lead_sale_chain_by_hand(self, owner, program, link):
        click_id = self.send(owner, program, event_type="click").json()["data"]["click_id"]
        lead = self.send(owner, program, event_type="lead", click_id=click_id, customer_key="dev_42").json()["data"]
        assert (lead["click_id"], lead["customer_key"]) == (click_id, "dev_42")
        assert ClickEvent.objects.count() == 1
        response = self.send(owner, program, event_type="sale", customer_key="dev_42")
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        data = response.json()["data"]
        assert data == {
            "event_type": "sale",
            "event_id": sale.pk,
            "program_id": program.pk,
            "test_mode": True,
            "message": "Test sale recorded",
            "transaction_id": sale.processor_event_id,
            "amount_cents": 1000,
            "attributed": True,
            "click_id": click_id,
        }
        assert sale.is_test and sale.amount_cents == 1000
        assert Customer.objects.get(click_id=click_id).customer_status == "converted"
        assert nothing_real_changed(link)

    def test_a_sale_with_nothing_to_attribute_to_is_stored_unattributed(self, owner, program):
        response = self.send(owner, program, event_type="sale")
        assert response.status_code == 200
        data = response.json()["data"]
        assert (data["attributed"], data["click_id"]) == (False, None)
        assert SaleEvent.objects.get().is_test

    def test_a_lead_for_an_unknown_click_id_is_the_lead_services_400(self, owner, program, link):
        response = self.send(owner, program, event_type="lead", click_id="cust_nobody")
        assert response.status_code == 400
        assert response.json() == bad_request("Customer not found. Provide a valid click_id or customer_key.")
        assert not LeadEvent.objects.exists()

    def test_a_lead_for_another_programs_click_is_refused(self, owner, program, link):
        foreign = CustomerFactory(link=ReferralLinkFactory(), is_test=True)
        response = self.send(owner, program, event_type="lead", click_id=foreign.click_id)
        assert response.status_code == 400
        assert response.json() == bad_request("Customer does not belong to this program")
        assert not LeadEvent.objects.exists()

    def test_a_test_lead_on_a_real_customer_changes_nothing_real(self, owner, program, link):
        real = CustomerFactory(link=link)
        response = self.send(owner, program, event_type="lead", click_id=real.click_id)
        assert response.status_code == 200
        real.refresh_from_db()
        assert (real.customer_status, real.customer_key) == ("click", None)
        assert LeadEvent.objects.get().is_test

    def test_without_a_link_a_click_is_refused(self, owner, program):
        for event_type in ("click", "lead"):
            response = self.send(owner, program, event_type=event_type)
            assert response.status_code == 400
            assert response.json() == bad_request(
                "No active referral link with a partner. Create a partner and a referral link first."
            )
        assert not ClickEvent.objects.exists()

    def test_without_a_test_key_it_is_refused(self, owner, program, link):
        ProgramKey.objects.filter(program=program, mode="test").delete()
        response = self.send(owner, program, event_type="click")
        assert response.status_code == 400
        assert response.json() == bad_request("The program has no test key. Regenerate it in the dashboard.")
        assert not ClickEvent.objects.exists()

    def test_a_short_link_with_url_characters_still_works(self, owner, program):
        ReferralLinkFactory(program=program, short_link="a+b&c#d e")
        response = self.send(owner, program, event_type="click")
        assert response.status_code == 200
        assert ClickEvent.objects.get().link.short_link == "a+b&c#d e"

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, "event_type is required"),
            ({"event_type": None}, "event_type must be one of click, lead, sale"),
            ({"event_type": "conversion"}, "event_type must be one of click, lead, sale"),
            ({"event_type": ["click"]}, "event_type must be one of click, lead, sale"),
            ({"event_type": "lead", "click_id": 5}, "click_id must be a string of at most 255 characters"),
            ({"event_type": "lead", "click_id": "x" * 256}, "click_id must be a string of at most 255 characters"),
            ({"event_type": "sale", "customer_key": True}, "customer_key must be a string of at most 255 characters"),
        ],
    )
    def test_it_refuses_bad_bodies_and_records_nothing(self, owner, program, link, body, message):
        response = self.send(owner, program, **body)
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        assert not (ClickEvent.objects.exists() or LeadEvent.objects.exists() or SaleEvent.objects.exists())

    def test_a_failure_is_a_500_and_the_click_does_not_stay_half_written(self, owner, program, link):
        with mock.patch("tracking.services.click.ClickEvent.save", side_effect=RuntimeError("boom")):
            response = self.send(owner, program, event_type="click")
        assert response.status_code == 500
        assert response.json()["error"]["message"] == "Internal server error"
        assert not Customer.objects.exists()


class TestCheckTestEvents:
    URL = "/api/tracking/check-test-events"

    def check(self, client, program, **body):
        return client.post(self.URL, {"program_id": program.pk, **body}, format="json")

    def test_it_reports_the_last_hours_test_events_by_type(self, owner, program, link, frozen):
        customer = CustomerFactory(link=link, is_test=True)
        old = ClickEvent.objects.create(program=program, is_test=True, click_timestamp=NOW - timedelta(minutes=61))
        first = ClickEvent.objects.create(program=program, is_test=True, click_timestamp=NOW - timedelta(minutes=30))
        last = ClickEvent.objects.create(program=program, is_test=True, click_timestamp=NOW - timedelta(minutes=5))
        ClickEvent.objects.create(program=program, is_test=False, click_timestamp=NOW)  # live: not a test event
        sale = SaleFactory(customer=customer, is_test=True, sale_date=NOW - timedelta(minutes=1))
        SaleFactory(customer=CustomerFactory(link=ReferralLinkFactory(), is_test=True), is_test=True, sale_date=NOW)
        assert old.pk < first.pk < last.pk

        response = self.check(owner, program)

        assert response.status_code == 200
        assert response.json() == {
            "data": {
                "program_id": program.pk,
                "since": (NOW - timedelta(hours=1)).isoformat(),
                "checked_at": NOW.isoformat(),
                "events": {
                    "click": {
                        "count": 2,
                        "last_at": (NOW - timedelta(minutes=5)).isoformat(),
                        "last_event_id": last.pk,
                    },
                    "lead": {"count": 0, "last_at": None, "last_event_id": None},
                    "sale": {"count": 1, "last_at": (NOW - timedelta(minutes=1)).isoformat(), "last_event_id": sale.pk},
                },
                "received": ["click", "sale"],
                "missing": ["lead"],
            }
        }

    def test_since_moves_the_window(self, owner, program, frozen):
        ClickEvent.objects.create(program=program, is_test=True, click_timestamp=NOW - timedelta(days=2))
        data = self.check(owner, program, since="2025-05-30").json()["data"]
        assert data["since"] == "2025-05-30T00:00:00+00:00"
        assert data["events"]["click"]["count"] == 1
        data = self.check(owner, program, since="2025-05-30T12:00:01+00:00").json()["data"]
        assert data["events"]["click"]["count"] == 0

    def test_a_test_call_shows_up(self, owner, program, link):
        sent = owner.post("/api/tracking/test", {"program_id": program.pk, "event_type": "click"}, format="json")
        data = self.check(owner, program).json()["data"]
        assert data["events"]["click"]["last_event_id"] == sent.json()["data"]["event_id"]
        assert data["received"] == ["click"]

    def test_a_null_since_is_the_default(self, owner, program, frozen):
        data = self.check(owner, program, since=None).json()["data"]
        assert data["since"] == (NOW - timedelta(hours=1)).isoformat()

    @pytest.mark.parametrize("since", ["an hour ago", 3600, "2025-06-01T25:00:00Z"])
    def test_a_bad_since_is_400(self, owner, program, since):
        response = self.check(owner, program, since=since)
        assert response.status_code == 400
        assert response.json() == bad_request("since must be an ISO 8601 date or date-time")

    def test_it_reads_one_aggregate_per_type(self, owner, program, django_assert_num_queries):
        # 1 session, 2 user, 3 program, 4 membership, 5-7 count/latest/highest id of test clicks, leads, sales
        with django_assert_num_queries(7):
            assert self.check(owner, program).status_code == 200
