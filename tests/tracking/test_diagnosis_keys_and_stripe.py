"""Readiness names the mistakes about keys, the tracker, sales without leads and Stripe: each is made over HTTP
as an integrator would make it, then insight.diagnosis finds it with its fix."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

import insight.diagnosis.keys_and_stripe as keys_and_stripe
from core import messages
from insight.diagnosis import Mistake, mistakes_find
from programs.models import ApiCall, Program, ProgramKey, RetiredProgramKey
from programs.services import program_key_regenerate
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer
from tests.stripe_payloads import ACCOUNT, checkout_session, event, invoice, post_event
from tracking.models import ProcessorEvent, SaleEvent

pytestmark = pytest.mark.django_db

SALE_URL = "/api/v1/track/sale"
CLICK_URL = "/api/v1/track/click"
VISIT_URL = "/api/v1/track/visit"
READINESS_URL = "/api/v1/programs/me/readiness"


def mistake(program, code: str) -> Mistake | None:
    """The mistake as GET /api/v1/programs/me/readiness names it (asked with the program's test key, so the
    question itself is no live-key call), checked against insight.diagnosis directly."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {program.raw_test_api_key}")
    response = client.get(READINESS_URL)
    assert response.status_code == 200, response.content
    named = next((m for m in response.json()["mistakes"] if m["code"] == code), None)
    direct = next((m for m in mistakes_find(program=program, now=timezone.now()) if m.code == code), None)
    if named is None or direct is None:
        assert named is None and direct is None
        return None
    assert named == direct.as_dict()
    return direct


def post_sale(api_client, key: str, **body):
    return api_client.post(SALE_URL, body, format="json", **bearer(key))


class TestTestKeyOnLiveTraffic:
    def test_test_sales_without_live_ones_are_named(self, api_client):
        program = ProgramFactory()
        for n in range(keys_and_stripe.TEST_TRAFFIC_MIN_CALLS):
            response = post_sale(api_client, program.raw_test_api_key, transaction_id=f"t{n}", amount_cents=1000)
            assert response.status_code == 200
        found = mistake(program, "test_key_on_live_traffic")
        assert found is not None
        assert found.count == keys_and_stripe.TEST_TRAFFIC_MIN_CALLS
        assert "aff_test_" in found.fix and "live key" in found.fix
        assert found.last_seen_at is not None

    def test_a_few_test_calls_or_any_live_call_are_not_a_mistake(self, api_client):
        program = ProgramFactory()
        customer = CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="u1")
        post_sale(api_client, program.raw_test_api_key, transaction_id="t0", amount_cents=1000)
        assert mistake(program, "test_key_on_live_traffic") is None
        for n in range(1, keys_and_stripe.TEST_TRAFFIC_MIN_CALLS + 1):
            post_sale(api_client, program.raw_test_api_key, transaction_id=f"t{n}", amount_cents=1000)
        live = post_sale(api_client, program.raw_api_key, transaction_id="live1", amount_cents=1000, customer_key="u1")
        assert live.status_code == 200, live.content
        assert SaleEvent.objects.filter(customer=customer, is_test=False).exists()
        assert mistake(program, "test_key_on_live_traffic") is None


class TestRetiredKeyUsed:
    def test_an_old_key_after_regeneration_is_named_with_its_date(self, api_client):
        program = ProgramFactory()
        old = program.raw_api_key
        program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
        assert RetiredProgramKey.objects.filter(program=program, mode="live").count() == 1

        response = post_sale(api_client, old, transaction_id="t1", amount_cents=1000, customer_key="u1")
        post_sale(api_client, old, transaction_id="t2", amount_cents=1000, customer_key="u1")

        # The spec's answer is unchanged.
        assert response.status_code == 401
        assert response.json()["error"]["message"] == messages.INVALID_API_TOKEN
        row = ApiCall.objects.filter(route="track-sale").latest("id")
        today = timezone.now().date().isoformat()
        assert row.program_id == program.pk
        assert row.excerpt["retired_key"] is True and row.excerpt["replaced_on"] == today
        found = mistake(program, "retired_key_used")
        assert found is not None
        assert found.count == 2
        assert found.title == f"This key was replaced on {today}; 2 calls still use it"
        assert "Update the key in your backend" in found.fix

    def test_readiness_names_it_with_its_fix(self, api_client):
        program = ProgramFactory()
        old = program.raw_api_key
        current = program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
        post_sale(api_client, old, transaction_id="t1", amount_cents=1000, customer_key="u1")
        response = api_client.get(READINESS_URL, **bearer(current))
        assert response.status_code == 200
        named = {m["code"]: m for m in response.json()["mistakes"]}
        assert named["retired_key_used"]["count"] == 1
        assert named["retired_key_used"]["fix"].startswith("Update the key in your backend")

    def test_an_unknown_key_stays_anonymous(self, api_client):
        program = ProgramFactory()
        response = post_sale(api_client, "aff_" + "x" * 40, transaction_id="t1", amount_cents=1000)
        assert response.status_code == 401
        assert response.json()["error"]["message"] == messages.INVALID_API_TOKEN
        assert ApiCall.objects.get(route="track-sale").program_id is None
        assert mistake(program, "retired_key_used") is None

    def test_regenerating_twice_keeps_both_digests(self):
        program = ProgramFactory()
        program_key_regenerate(program=program, mode=ProgramKey.Mode.TEST)
        program_key_regenerate(program=program, mode=ProgramKey.Mode.TEST)
        assert RetiredProgramKey.objects.filter(program=program, mode="test").count() == 2


class TestTrackerMisconfigured:
    def test_visits_without_a_program_id_from_the_programs_domain_are_named(self, api_client):
        program = ProgramFactory(domain="shop.example.com")
        for _ in range(2):
            response = api_client.post(VISIT_URL, {"page_url": "https://www.shop.example.com/pricing"}, format="json")
            assert response.status_code == 400
        api_client.post(VISIT_URL, {"page_url": "https://elsewhere.test/"}, format="json")
        found = mistake(program, "tracker_misconfigured")
        assert found is not None
        assert found.count == 2
        assert f'data-svc-program-id="{program.pk}"' in found.fix

    def test_the_tracker_on_another_domain_is_named(self, api_client):
        program = ProgramFactory(domain="shop.example.com")
        sent = {"program_id": program.pk, "page_url": "https://staging.other.test/signup"}
        assert api_client.post(VISIT_URL, sent, format="json").status_code == 200
        ok = {"program_id": program.pk, "page_url": "https://shop.example.com/"}
        assert api_client.post(VISIT_URL, ok, format="json").status_code == 200
        found = mistake(program, "tracker_misconfigured")
        assert found is not None
        assert found.count == 1
        assert found.title == (
            "The tracker runs on another domain (staging.other.test) than the program's (shop.example.com)"
        )

    def test_visits_on_the_programs_domain_are_fine(self, api_client):
        program = ProgramFactory(domain="shop.example.com")
        sent = {"program_id": program.pk, "page_url": "https://blog.shop.example.com/post"}
        assert api_client.post(VISIT_URL, sent, format="json").status_code == 200
        assert mistake(program, "tracker_misconfigured") is None


class TestSalesWithoutLeads:
    def test_a_sale_by_click_id_with_no_lead_is_named(self, api_client):
        program = ProgramFactory()
        link = ReferralLinkFactory(program=program)
        click = api_client.post(
            CLICK_URL, {"affiliate_url": f"https://{program.domain}/?aff={link.short_link}"}, format="json"
        )
        assert click.status_code == 200, click.content
        click_id = click.json()["click_id"]
        sale = post_sale(api_client, program.raw_api_key, transaction_id="t1", amount_cents=5000, click_id=click_id)
        assert sale.status_code == 200, sale.content
        assert SaleEvent.objects.get().attributed_by == "click_id"
        found = mistake(program, "sales_without_leads")
        assert found is not None
        assert found.count == 1
        assert "Send the lead at signup" in found.fix

    def test_a_sale_by_click_id_after_a_lead_is_fine(self, api_client):
        program = ProgramFactory()
        link = ReferralLinkFactory(program=program)
        click = api_client.post(
            CLICK_URL, {"affiliate_url": f"https://{program.domain}/?aff={link.short_link}"}, format="json"
        )
        click_id = click.json()["click_id"]
        lead = api_client.post(
            "/api/v1/track/lead",
            {"click_id": click_id, "customer_key": "u1", "email": "ada@example.com"},
            format="json",
            **bearer(program.raw_api_key),
        )
        assert lead.status_code == 200, lead.content
        sale = post_sale(api_client, program.raw_api_key, transaction_id="t1", amount_cents=5000, click_id=click_id)
        assert sale.status_code == 200, sale.content
        assert mistake(program, "sales_without_leads") is None


@pytest.mark.usefixtures("stripe_webhook_secret")
class TestStripeUnattributed:
    @pytest.fixture
    def deliver(self, client, django_capture_on_commit_callbacks):
        def send(payload: dict) -> ProcessorEvent:
            with django_capture_on_commit_callbacks(execute=True):
                response = post_event(client, payload)
            assert response.status_code == 200, response.content
            return ProcessorEvent.objects.get(event_id=payload["id"])

        return send

    def test_events_for_a_program_without_its_connection_are_named(self, deliver):
        program = ProgramFactory()  # not connected
        stored = deliver(
            event("checkout.session.completed", checkout_session(metadata={"program_id": str(program.pk)}))
        )
        assert stored.program_id is None
        found = mistake(program, "stripe_unattributed")
        assert found is not None
        assert found.count == 1
        assert "connection is missing" in found.title
        assert "Connect the program's Stripe account" in found.fix

    def test_payments_without_metadata_are_named(self, deliver):
        program = ProgramFactory(stripe_account_id=ACCOUNT)
        deliver(event("checkout.session.completed", checkout_session(email="nobody@example.com")))
        found = mistake(program, "stripe_unattributed")
        assert found is not None
        assert found.title == "1 Stripe payments were recorded unattributed: no attribution metadata"
        assert "svc_click_id" in found.fix

    def test_subscriptions_without_subscription_data_metadata_are_named(self, deliver):
        program = ProgramFactory(stripe_account_id=ACCOUNT)
        deliver(event("invoice.payment_succeeded", invoice(email="nobody@example.com", customer="cus_Unknown")))
        assert SaleEvent.objects.get().attributed is False
        found = mistake(program, "stripe_unattributed")
        assert found is not None
        assert "1 of them subscriptions without subscription_data.metadata" in found.title
        assert "subscription_data.metadata" in found.fix

    def test_attributed_payments_are_fine(self, deliver):
        program = ProgramFactory(stripe_account_id=ACCOUNT)
        customer = CustomerFactory(link=ReferralLinkFactory(program=program), customer_status="lead")
        deliver(event("checkout.session.completed", checkout_session(metadata={"svc_click_id": customer.click_id})))
        assert SaleEvent.objects.get().attributed is True
        assert mistake(program, "stripe_unattributed") is None


class TestSalesScan:
    """The sale detectors read at most SALES_SCAN of the window's newest live sales, so readiness costs the same
    for a program taking a million sales a week."""

    @staticmethod
    def unattributed_stripe_sales(count: int, now) -> Program:
        """`count` live Stripe sales nobody was attributed, an hour apart, the newest at `now`."""
        program = ProgramFactory.create(stripe_account_id=ACCOUNT)
        customer = CustomerFactory.create(link=ReferralLinkFactory.create(program=program))
        for n in range(count):
            SaleEvent.objects.create(
                program=program,
                customer=customer,
                processor_event_id=f"pi_{n}",
                amount_cents=1000,
                provider="stripe",
                attributed=False,
                sale_date=now - timedelta(hours=n),
            )
        return program

    def test_only_the_newest_sales_of_the_window_are_examined(self, monkeypatch):
        monkeypatch.setattr(keys_and_stripe, "SALES_SCAN", 3)
        now = timezone.now()
        found = mistake(self.unattributed_stripe_sales(5, now), "stripe_unattributed")
        assert found is not None
        assert (found.count, found.last_seen_at) == (3, now)

    def test_a_quiet_window_is_examined_whole(self):
        found = mistake(self.unattributed_stripe_sales(2, timezone.now()), "stripe_unattributed")
        assert found is not None and found.count == 2
