"""POST /api/v1/track/lead through the HTTP API: browser and server modes, the id rules in the spec's
order, provisional leads, test mode, limits and the hot path."""

import re
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone

from core import messages
from programs.models import PartnerProgram, ProgramKey
from programs.services import program_key_mark_rotation
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW, assert_rate_limited, bad_request, bearer, platform_error
from tracking.models import Customer, LeadEvent

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/lead"


def post_lead(api_client, body: dict[str, Any], **extra):
    return api_client.post(URL, body, format="json", **extra)


def partner_program_leads(customer: Customer) -> int:
    return PartnerProgram.objects.get(partner=customer.first_partner, program=customer.program).leads


def assert_customer_untouched(customer: Customer) -> None:
    customer.refresh_from_db()
    assert customer.customer_status == "click"
    assert customer.customer_key is None
    assert partner_program_leads(customer) == 0


@pytest.fixture
def program():
    return ProgramFactory()


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


@pytest.fixture
def customer(link):
    return CustomerFactory(link=link)


@pytest.fixture
def strict_program():
    return ProgramFactory(lead_auth="server_required")


@pytest.fixture
def strict_customer(strict_program):
    return CustomerFactory(link=ReferralLinkFactory(program=strict_program))


class TestBrowserMode:
    @pytest.mark.parametrize("headers", [{}, {"HTTP_AUTHORIZATION": "Bearer"}, {"HTTP_AUTHORIZATION": "Bearer   "}])
    def test_it_falls_back_to_browser_mode_without_header_or_with_empty_token(self, api_client, customer, headers):
        response = post_lead(api_client, {"click_id": customer.click_id}, **headers)
        assert response.status_code == 200
        event = LeadEvent.objects.get()
        assert response.json() == {"success": True, "lead_id": event.pk, "click_id": customer.click_id}
        assert event.server_mode is False

    def test_it_moves_the_customer_to_lead_and_stores_the_lead_event(self, api_client, customer, program):
        before = timezone.now()
        post_lead(
            api_client,
            {"click_id": customer.click_id, "customer_key": "user-42", "email": "ada@example.com"},
        )
        customer.refresh_from_db()
        assert customer.customer_status == "lead"
        assert customer.customer_key == "user-42"  # the lead settled, so the key is saved
        event = LeadEvent.objects.get()
        assert event.program == program
        assert event.customer == customer
        assert event.partner == customer.first_partner
        assert event.click_id == customer.click_id
        assert event.customer_key == "user-42"
        assert event.email == "ada@example.com"
        assert event.provisional is False
        assert event.is_test is False
        assert before <= event.settled_at <= timezone.now()
        assert before <= event.lead_timestamp <= timezone.now()

    def test_it_counts_the_lead_on_the_partner_program(self, api_client, customer):
        post_lead(api_client, {"click_id": customer.click_id})
        assert partner_program_leads(customer) == 1

    @pytest.mark.parametrize("as_sent", ["int", "numeric string"])
    def test_it_accepts_the_program_id_of_the_customers_program(self, api_client, customer, program, as_sent):
        program_id = program.pk if as_sent == "int" else str(program.pk)
        response = post_lead(api_client, {"click_id": customer.click_id, "additional_data": {"program_id": program_id}})
        assert response.status_code == 200

    def test_it_finds_no_customer_with_another_programs_program_id(self, api_client, customer):
        other = ProgramFactory()
        response = post_lead(api_client, {"click_id": customer.click_id, "additional_data": {"program_id": other.pk}})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_NOT_FOUND)
        assert_customer_untouched(customer)
        assert not LeadEvent.objects.exists()


class TestServerMode:
    def test_it_settles_the_lead_and_saves_the_customer_key(self, api_client, customer, program):
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "customer_key": "user-42"},
            **bearer(program.raw_api_key),
        )
        assert response.status_code == 200
        event = LeadEvent.objects.get()
        assert response.json() == {"success": True, "lead_id": event.pk, "click_id": customer.click_id}
        assert event.server_mode is True
        assert event.provisional is False
        assert event.customer_key == "user-42"
        customer.refresh_from_db()
        assert customer.customer_status == "lead"
        assert customer.customer_key == "user-42"
        assert partner_program_leads(customer) == 1

    def test_it_answers_the_same_body_shape_in_both_modes(self, api_client, program, link):
        browser_customer, server_customer = CustomerFactory(link=link), CustomerFactory(link=link)
        browser = post_lead(api_client, {"click_id": browser_customer.click_id, "customer_key": "b"})
        server = post_lead(
            api_client,
            {"click_id": server_customer.click_id, "customer_key": "s"},
            **bearer(program.raw_api_key),
        )
        assert browser.status_code == server.status_code == 200
        assert set(browser.json()) == set(server.json()) == {"success", "lead_id", "click_id"}

    @pytest.mark.parametrize("token", ["aff_not_a_real_key", "garbage"])
    def test_it_answers_401_only_for_a_token_matching_no_program(self, api_client, customer, token):
        response = post_lead(api_client, {"click_id": customer.click_id}, **bearer(token))
        assert response.status_code == 401
        assert response.json() == platform_error(401, "UnauthorizedError", messages.INVALID_API_TOKEN)
        assert response["WWW-Authenticate"] == "Bearer"
        assert_customer_untouched(customer)
        assert not LeadEvent.objects.exists()

    def test_it_finds_no_customer_for_a_first_lead_with_only_customer_key(self, api_client, customer, program):
        response = post_lead(api_client, {"customer_key": "user-42"}, **bearer(program.raw_api_key))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_NOT_FOUND)
        assert_customer_untouched(customer)

    def test_it_finds_the_customer_by_customer_key_once_settled(self, api_client, customer, program):
        post_lead(
            api_client,
            {"click_id": customer.click_id, "customer_key": "user-42"},
            **bearer(program.raw_api_key),
        )
        response = post_lead(api_client, {"customer_key": "user-42"}, **bearer(program.raw_api_key))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_STATUS_CONFLICT.format(status="lead"))

    def test_it_refuses_a_customer_of_another_program(self, api_client, customer):
        other = ProgramFactory()
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "customer_key": "user-42"},
            **bearer(other.raw_api_key),
        )
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_OTHER_PROGRAM)
        assert_customer_untouched(customer)
        assert not LeadEvent.objects.exists()


class TestKeyRotation:
    def test_it_refuses_a_key_past_its_rotation_deadline_in_the_typed_envelope(self, api_client, customer, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(minutes=1))
        response = post_lead(api_client, {"click_id": customer.click_id}, **bearer(program.raw_api_key))
        assert response.status_code == 401
        body = response.json()
        assert set(body) == {"error"}
        assert body["error"]["code"] == "api_key_rotation_required"
        assert set(body["error"]) == {"code", "message", "hint", "docs_url"}
        for header in ("Deprecation", "Sunset", "Link"):
            assert response.has_header(header)
        assert not LeadEvent.objects.exists()
        assert_customer_untouched(customer)

    def test_it_settles_with_a_key_before_its_deadline_and_warns(self, api_client, customer, program):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() + timedelta(days=7))
        response = post_lead(api_client, {"click_id": customer.click_id}, **bearer(program.raw_api_key))
        assert response.status_code == 200
        body = response.json()
        assert [warning["code"] for warning in body.pop("warnings")] == ["api_key_rotation_required"]
        assert body == {"success": True, "lead_id": LeadEvent.objects.get().pk, "click_id": customer.click_id}
        assert response["Deprecation"] == f"@{int(key.rotation_marked_at.timestamp())}"


class TestIdRules:
    """The body checks answer in the spec's order: ids present, click_id without a key, customer found,
    customer in the key's program, customer still at `click`."""

    @pytest.mark.parametrize("mode", ["browser", "server"])
    @pytest.mark.parametrize("body", [{}, {"click_id": "", "customer_key": ""}, {"email": "ada@example.com"}])
    def test_it_needs_click_id_or_customer_key(self, api_client, program, mode, body):
        headers = bearer(program.raw_api_key) if mode == "server" else {}
        response = post_lead(api_client, body, **headers)
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_ID_REQUIRED)

    def test_it_needs_a_click_id_in_browser_mode(self, api_client, customer):
        response = post_lead(api_client, {"customer_key": "user-42"})
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CLICK_ID_REQUIRED_BROWSER)
        assert_customer_untouched(customer)

    @pytest.mark.parametrize("mode", ["browser", "server"])
    def test_it_finds_no_customer_for_an_unknown_click_id(self, api_client, customer, program, mode):
        headers = bearer(program.raw_api_key) if mode == "server" else {}
        response = post_lead(api_client, {"click_id": "cust_nobody", "customer_key": "user-42"}, **headers)
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_NOT_FOUND)
        assert not LeadEvent.objects.exists()

    @pytest.mark.parametrize("mode", ["browser", "server"])
    def test_it_reports_the_current_status_on_a_second_lead(self, api_client, customer, program, mode):
        headers = bearer(program.raw_api_key) if mode == "server" else {}
        assert post_lead(api_client, {"click_id": customer.click_id, "customer_key": "u"}, **headers).status_code == 200
        response = post_lead(api_client, {"click_id": customer.click_id, "customer_key": "u"}, **headers)
        assert response.status_code == 400
        assert response.json() == bad_request("Customer status cannot be updated to lead. Current status: lead")
        assert LeadEvent.objects.count() == 1
        assert partner_program_leads(customer) == 1

    def test_it_reports_the_status_of_a_customer_past_lead(self, api_client, link, program):
        converted = CustomerFactory(link=link, customer_status="converted", customer_key="user-42")
        response = post_lead(api_client, {"click_id": converted.click_id}, **bearer(program.raw_api_key))
        assert response.json() == bad_request(messages.LEAD_STATUS_CONFLICT.format(status="converted"))

    def test_it_checks_the_program_before_the_status(self, api_client, link):
        already_lead = CustomerFactory(link=link, customer_status="lead")
        other = ProgramFactory()
        response = post_lead(api_client, {"click_id": already_lead.click_id}, **bearer(other.raw_api_key))
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_OTHER_PROGRAM)


class TestProvisionalLeads:
    @pytest.mark.parametrize("headers", [{}, {"HTTP_AUTHORIZATION": "Bearer "}])
    def test_it_keeps_a_browser_lead_on_a_server_required_program_provisional(
        self, api_client, strict_customer, headers
    ):
        response = post_lead(api_client, {"click_id": strict_customer.click_id, "customer_key": "user-42"}, **headers)
        assert response.status_code == 200
        event = LeadEvent.objects.get()
        assert response.json() == {
            "success": True,
            "lead_id": event.pk,
            "click_id": strict_customer.click_id,
            "provisional": True,
        }
        assert event.provisional is True
        assert event.settled_at is None
        assert event.customer_key == "user-42"
        assert_customer_untouched(strict_customer)  # still `click`, no customer_key, no lead counted

    def test_it_answers_the_settled_body_plus_provisional(self, api_client, strict_customer, customer):
        provisional = post_lead(api_client, {"click_id": strict_customer.click_id}).json()
        settled = post_lead(api_client, {"click_id": customer.click_id}).json()
        assert set(provisional) - set(settled) == {"provisional"}
        assert set(settled) <= set(provisional)

    def test_it_settles_the_provisional_lead_on_a_server_lead(self, api_client, strict_customer, strict_program):
        post_lead(api_client, {"click_id": strict_customer.click_id, "customer_key": "user-42"})
        provisional = LeadEvent.objects.get()

        response = post_lead(
            api_client,
            {"click_id": strict_customer.click_id, "customer_key": "user-42"},
            **bearer(strict_program.raw_api_key),
        )

        assert response.status_code == 200
        assert response.json() == {
            "success": True,
            "lead_id": provisional.pk,
            "click_id": strict_customer.click_id,
        }
        event = LeadEvent.objects.get()  # the provisional lead itself, not a second one
        assert event.provisional is False
        assert event.settled_at is not None
        assert event.server_mode is True
        strict_customer.refresh_from_db()
        assert strict_customer.customer_status == "lead"
        assert strict_customer.customer_key == "user-42"
        assert partner_program_leads(strict_customer) == 1

    def test_it_cannot_settle_it_with_only_the_customer_key(self, api_client, strict_customer, strict_program):
        # customer_key is saved only when a lead settles, so it does not find the provisional customer yet.
        post_lead(api_client, {"click_id": strict_customer.click_id, "customer_key": "user-42"})
        response = post_lead(api_client, {"customer_key": "user-42"}, **bearer(strict_program.raw_api_key))
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_NOT_FOUND)
        assert LeadEvent.objects.get().provisional is True

    def test_it_keeps_one_provisional_lead_for_repeated_browser_leads(self, api_client, strict_customer):
        first = post_lead(api_client, {"click_id": strict_customer.click_id, "customer_key": "user-42"})
        again = post_lead(api_client, {"click_id": strict_customer.click_id, "customer_key": "user-42"})
        assert again.status_code == 200
        assert again.json() == first.json()
        assert LeadEvent.objects.count() == 1
        assert_customer_untouched(strict_customer)

    def test_it_settles_a_server_lead_at_once(self, api_client, strict_customer, strict_program):
        response = post_lead(
            api_client,
            {"click_id": strict_customer.click_id, "customer_key": "u"},
            **bearer(strict_program.raw_api_key),
        )
        assert "provisional" not in response.json()
        assert LeadEvent.objects.get().provisional is False
        strict_customer.refresh_from_db()
        assert strict_customer.customer_status == "lead"


class TestTestMode:
    def assert_test_body(self, response, program) -> LeadEvent:
        assert response.status_code == 200
        event = LeadEvent.objects.get()
        assert response.json() == {
            "success": True,
            "message": messages.LEAD_TEST_RECORDED,
            "data": {"eventId": event.pk, "programId": program.pk, "test_mode": True},
        }
        assert event.is_test is True
        return event

    def test_it_records_a_test_lead_for_the_body_flag_and_changes_nothing_real(self, api_client, customer, program):
        response = post_lead(
            api_client,
            {
                "click_id": customer.click_id,
                "customer_key": "user-42",
                "additional_data": {"test_mode": True},
            },
        )
        self.assert_test_body(response, program)
        assert_customer_untouched(customer)

    def test_it_records_a_test_lead_for_the_programs_test_key(self, api_client, customer, program):
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "customer_key": "user-42"},
            **bearer(program.raw_test_api_key),
        )
        self.assert_test_body(response, program)
        assert_customer_untouched(customer)

    def test_it_counts_no_lead_for_a_test_customer(self, api_client, link, program):
        test_customer = CustomerFactory(link=link, is_test=True)
        response = post_lead(api_client, {"click_id": test_customer.click_id, "additional_data": {"test_mode": True}})
        self.assert_test_body(response, program)
        assert partner_program_leads(test_customer) == 0

    @pytest.mark.parametrize("key_mode", ["live", "test"])
    def test_it_answers_403_for_a_key_with_another_programs_program_id(self, api_client, customer, program, key_mode):
        other = ProgramFactory()
        raw = program.raw_api_key if key_mode == "live" else program.raw_test_api_key
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "additional_data": {"test_mode": True, "program_id": other.pk}},
            **bearer(raw),
        )
        assert response.status_code == 403
        assert response.json() == platform_error(403, "ForbiddenError", messages.PROGRAM_ID_MISMATCH)
        assert not LeadEvent.objects.exists()
        assert_customer_untouched(customer)

    def test_it_accepts_a_key_with_its_own_program_id(self, api_client, customer, program):
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "additional_data": {"test_mode": True, "program_id": program.pk}},
            **bearer(program.raw_api_key),
        )
        self.assert_test_body(response, program)

    def test_it_does_not_check_a_keyless_test_lead_against_a_key(self, api_client, customer):
        # No 403 without a key; the browser-mode program_id rule applies instead.
        other = ProgramFactory()
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "additional_data": {"test_mode": True, "program_id": other.pk}},
        )
        assert response.status_code == 400
        assert response.json() == bad_request(messages.LEAD_CUSTOMER_NOT_FOUND)

    def test_it_does_not_check_program_id_outside_test_mode(self, api_client, customer, program):
        other = ProgramFactory()
        response = post_lead(
            api_client,
            {"click_id": customer.click_id, "additional_data": {"program_id": other.pk}},
            **bearer(program.raw_api_key),
        )
        assert response.status_code == 200
        assert LeadEvent.objects.get().is_test is False


class TestRateLimitAndHeaders:
    def test_it_answers_429_to_the_31st_lead_in_a_minute_and_records_nothing(self, api_client, customer):
        for _ in range(30):
            assert post_lead(api_client, {}, REMOTE_ADDR="203.0.113.9").status_code == 400

        response = post_lead(api_client, {"click_id": customer.click_id}, REMOTE_ADDR="203.0.113.9")

        assert_rate_limited(response)
        assert response["X-RateLimit-Limit"] == "30"
        assert response.has_header("X-Request-ID")
        assert not LeadEvent.objects.exists()
        assert_customer_untouched(customer)

    def test_it_counts_the_limit_per_ip(self, api_client, customer):
        for _ in range(30):
            post_lead(api_client, {}, REMOTE_ADDR="203.0.113.9")
        response = post_lead(api_client, {"click_id": customer.click_id}, REMOTE_ADDR="203.0.113.10")
        assert response.status_code == 200

    def test_it_counts_a_keyed_lead_in_the_ip_bucket_too(self, api_client, customer, program):
        for _ in range(30):
            post_lead(api_client, {}, REMOTE_ADDR="203.0.113.9")
        response = post_lead(
            api_client,
            {"click_id": customer.click_id},
            REMOTE_ADDR="203.0.113.9",
            **bearer(program.raw_api_key),
        )
        assert response.status_code == 429

    def test_it_sends_request_id_and_rate_limit_headers(self, api_client, customer):
        response = post_lead(api_client, {"click_id": customer.click_id})
        assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
        assert response["X-RateLimit-Limit"] == "30"
        assert response["X-RateLimit-Remaining"] == "29"
        assert int(response["X-RateLimit-Reset"]) >= int(timezone.now().timestamp())

        error = post_lead(api_client, {})
        assert error.has_header("X-Request-ID")
        assert error["X-RateLimit-Remaining"] == "28"


class TestHotPath:
    def test_it_runs_seven_queries_and_one_transaction_for_a_server_lead(
        self, api_client, customer, program, django_assert_num_queries
    ):
        # Measured the same on SQLite and PostgreSQL. Django (>= 4.2) logs transaction statements:
        # inside the test's transaction lead_settle's atomic() is SAVEPOINT / RELEASE SAVEPOINT; in
        # production it is BEGIN / COMMIT, also logged, so the count is 9 there as well.
        # 1. SELECT program key JOIN program WHERE digest = sha256(token)
        # 2. SELECT customer JOIN program WHERE click_id = ...
        # 3. SAVEPOINT
        # 4. SELECT the customer's provisional lead, if any
        # 5. UPDATE customer SET status = lead, customer_key WHERE status = click (the race guard)
        # 6. INSERT lead event
        # 7. INSERT webhook event lead.created (the outbox row, in the lead's transaction; its fan-out is a
        #    task queued after the commit, which the test's transaction never reaches)
        # 8. RELEASE SAVEPOINT
        # 9. UPDATE partner-program SET leads = leads + 1 (after the commit)
        with django_assert_num_queries(9 + REQUEST_LOG_ROW):
            response = post_lead(
                api_client,
                {"click_id": customer.click_id, "customer_key": "user-42"},
                **bearer(program.raw_api_key),
            )
        assert response.status_code == 200


class TestServerFailure:
    def test_it_answers_500_lead_tracking_failed_and_rolls_the_lead_back(self, api_client, customer, program):
        with mock.patch(
            "tracking.services.lead.LeadEvent.save", side_effect=RuntimeError("db exploded: password=hunter2")
        ):
            response = post_lead(
                api_client,
                {"click_id": customer.click_id, "customer_key": "user-42"},
                **bearer(program.raw_api_key),
            )
        assert response.status_code == 500
        assert response.json() == platform_error(500, "InternalServerError", messages.LEAD_TRACKING_FAILED)
        assert "hunter2" not in response.content.decode()
        assert response.has_header("X-Request-ID")
        assert not LeadEvent.objects.exists()
        # The status move and the event insert share one transaction: the customer is still `click`.
        assert_customer_untouched(customer)

    def test_it_settles_the_lead_on_a_retry_after_the_failure(self, api_client, customer, program):
        body = {"click_id": customer.click_id, "customer_key": "user-42"}
        with mock.patch("tracking.services.lead.LeadEvent.save", side_effect=RuntimeError("boom")):
            assert post_lead(api_client, body, **bearer(program.raw_api_key)).status_code == 500
        response = post_lead(api_client, body, **bearer(program.raw_api_key))
        assert response.status_code == 200
        customer.refresh_from_db()
        assert customer.customer_status == "lead"
