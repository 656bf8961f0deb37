"""The old platform's step of the Stripe attribution (imports.stripe_attribution) through signed webhook events:
after the spec's five steps find no customer, a key the platform the program imported from writes on Stripe names
the imported referral (or a partner's imported link), and renewals then follow the Stripe customer id."""

import secrets
from typing import Any

import pytest

from commissions.models import Commission
from imports.models import ImportedRecord
from imports.stripe_attribution import metadata_keys, old_platform_customer
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.stripe_payloads import ACCOUNT, checkout_session, event, invoice, post_event
from tracking.models import Customer, ProcessorEvent, SaleEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stripe_webhook_secret")]

REWARDFUL_REFERRAL = "3f9b2c1e-8a4d-4f6e-9b7a-2d5c8e1f0a6b"


@pytest.fixture
def program():
    return ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="jane")


def imported(program, platform: str, kind: str, source_id: str, obj) -> None:
    ImportedRecord.objects.create(program=program, platform=platform, kind=kind, source_id=source_id, object_id=obj.pk)


@pytest.fixture
def rewardful_customer(program, link):
    customer = CustomerFactory(link=link, customer_status="lead", email="old@example.com")
    imported(program, "rewardful", "referral", REWARDFUL_REFERRAL, customer)
    return customer


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks):
    def send(payload: dict) -> ProcessorEvent:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_event(client, payload)
        assert response.status_code == 200, response.content
        return ProcessorEvent.objects.get(event_id=payload["id"])

    return send


def stripe_customer(
    *, metadata: dict[str, Any], email: str = "buyer@example.com", customer_id: str = ""
) -> dict[str, Any]:
    """A Stripe customer object as customer.created / customer.updated carry it."""
    return {
        "id": customer_id or f"cus_{secrets.token_hex(7)}",
        "object": "customer",
        "email": email,
        "livemode": True,
        "metadata": metadata,
        "name": "Buyer",
    }


class TestPayments:
    def test_a_rewardful_referral_in_checkout_metadata_attributes_the_sale(self, deliver, rewardful_customer, link):
        session = checkout_session(amount=10000, metadata={"referral": REWARDFUL_REFERRAL}, customer="cus_Moved1")
        processed = deliver(event("checkout.session.completed", session))

        assert processed.status == "processed"
        assert "attributed by old_platform" in processed.outcome
        sale = SaleEvent.objects.get()
        assert (sale.customer, sale.partner_id, sale.attributed_by) == (
            rewardful_customer,
            link.partner_id,
            "stripe:old_platform",
        )
        assert Commission.objects.get(sale=sale).amount_cents == 2000
        # Renewals are matched by the Stripe customer id from now on (step 3), metadata or not.
        assert Customer.objects.get(pk=rewardful_customer.pk).processor_customer_id == "cus_Moved1"
        renewal = invoice(customer="cus_Moved1", email="other@example.com", billing_reason="subscription_cycle")
        assert "attributed by processor_customer_id" in deliver(event("invoice.payment_succeeded", renewal)).outcome

    def test_the_spec_steps_come_first(self, deliver, program, rewardful_customer):
        clicked = CustomerFactory(link=ReferralLinkFactory(program=program))
        metadata = {"svc_click_id": clicked.click_id, "referral": REWARDFUL_REFERRAL}
        deliver(event("checkout.session.completed", checkout_session(metadata=metadata)))
        assert SaleEvent.objects.get().attributed_by == "stripe:svc_click_id"

    def test_a_platform_the_program_never_imported_from_says_nothing(self, deliver, program, link):
        customer = CustomerFactory(link=link)
        # Imported from Tolt: Rewardful's key is not read, even naming a source id Tolt's import knows.
        imported(program, "tolt", "referral", REWARDFUL_REFERRAL, customer)
        processed = deliver(
            event("checkout.session.completed", checkout_session(metadata={"referral": REWARDFUL_REFERRAL}))
        )
        assert processed.outcome == "unattributed payment recorded (no commission)"
        assert SaleEvent.objects.get().customer is None

    def test_metadata_written_for_another_program_is_not_read(self, deliver, program, rewardful_customer):
        metadata = {"referral": REWARDFUL_REFERRAL, "program_id": str(program.pk + 1000)}
        deliver(event("checkout.session.completed", checkout_session(metadata=metadata)))
        assert SaleEvent.objects.get().customer is None

    def test_an_imported_customer_key_names_the_referral(self, deliver, program, link):
        # PartnerStack's customer_key is the customer's key on the owner's side, imported as customer_key.
        customer = CustomerFactory(link=link, customer_key="user_981")
        imported(program, "partnerstack", "referral", "cust_ps_1", customer)
        subscription = invoice(metadata={"customer_key": "user_981"}, customer="cus_Ps1")
        deliver(event("invoice.payment_succeeded", subscription))
        sale = SaleEvent.objects.get()
        assert (sale.customer, sale.attributed_by) == (customer, "stripe:old_platform")

    def test_a_partner_key_makes_a_customer_of_the_partners_imported_link(self, deliver, program, link):
        imported(program, "partnerstack", "link", "gspk:jane_partner", link)
        subscription = invoice(amount=5000, metadata={"partner_key": "jane_partner"}, customer="cus_Ps2")
        processed = deliver(event("invoice.payment_succeeded", subscription))

        sale = SaleEvent.objects.get()
        assert "attributed by old_platform" in processed.outcome
        customer = sale.customer
        assert (customer.first_partner_id, customer.first_link_id, customer.program) == (
            link.partner_id,
            link.pk,
            program,
        )
        assert (customer.email, customer.processor_customer_id) == ("buyer@example.com", "cus_Ps2")
        assert Commission.objects.get(sale=sale).amount_cents == 1000

    def test_an_imported_link_by_its_code(self, deliver, program, link):
        imported(program, "rewardful", "link", "lnk_1", link)
        deliver(event("checkout.session.completed", checkout_session(metadata={"referral": "jane"})))
        assert SaleEvent.objects.get().partner_id == link.partner_id

    def test_a_link_turned_off_attributes_nothing(self, deliver, program, link):
        imported(program, "partnerstack", "link", "gspk:jane_partner", link)
        link.is_active = False
        link.save(update_fields=["is_active"])
        deliver(event("invoice.payment_succeeded", invoice(metadata={"partner_key": "jane_partner"})))
        assert SaleEvent.objects.get().customer is None
        assert not Customer.objects.filter(first_link=link).exists()

    def test_a_code_not_imported_attributes_nothing(self, deliver, program, link):
        imported(program, "rewardful", "referral", "someone-else", CustomerFactory(link=link))
        deliver(event("checkout.session.completed", checkout_session(metadata={"referral": "jane"})))
        assert SaleEvent.objects.get().customer is None


class TestStripeCustomers:
    def test_a_tagged_stripe_customer_is_tied_and_its_payments_follow(self, deliver, program, link):
        customer = CustomerFactory(link=link, customer_status="lead")
        imported(program, "tolt", "referral", "clk_3nVb81", customer)
        tagged = stripe_customer(metadata={"tolt_referral": "clk_3nVb81"}, customer_id="cus_Tolt1")
        processed = deliver(event("customer.created", tagged))
        assert processed.status == "processed"
        assert processed.outcome == f"Stripe customer cus_Tolt1 tied to customer #{customer.pk} by old_platform"
        assert Customer.objects.get(pk=customer.pk).processor_customer_id == "cus_Tolt1"

        paid = invoice(customer="cus_Tolt1", email="unknown@example.com")
        assert "attributed by processor_customer_id" in deliver(event("invoice.payment_succeeded", paid)).outcome
        assert SaleEvent.objects.get().customer == customer

    def test_an_update_never_makes_a_second_customer(self, deliver, program, link):
        imported(program, "partnerstack", "link", "gspk:jane_partner", link)
        tagged = stripe_customer(metadata={"partner_key": "jane_partner"}, customer_id="cus_Ps3")
        assert deliver(event("customer.created", tagged)).status == "processed"
        again = deliver(event("customer.updated", tagged))
        tied = Customer.objects.get(processor_customer_id="cus_Ps3")
        assert (again.status, again.outcome) == ("ignored", f"Stripe customer cus_Ps3 is customer #{tied.pk} already")
        assert Customer.objects.filter(first_link=link).count() == 1

    def test_an_untagged_or_test_customer_is_ignored(self, deliver, program, rewardful_customer):
        plain = deliver(event("customer.created", stripe_customer(metadata={"plan": "pro"})))
        assert (plain.status, plain.outcome) == ("ignored", "no old platform's referral in the customer's metadata")
        test = deliver(
            event("customer.created", stripe_customer(metadata={"referral": REWARDFUL_REFERRAL}), livemode=False)
        )
        assert (test.status, test.outcome) == ("ignored", "test customer")
        assert Customer.objects.get(pk=rewardful_customer.pk).processor_customer_id == ""

    def test_a_customer_tied_to_another_stripe_customer_keeps_it(self, deliver, program, rewardful_customer):
        Customer.objects.filter(pk=rewardful_customer.pk).update(processor_customer_id="cus_First")
        processed = deliver(event("customer.created", stripe_customer(metadata={"referral": REWARDFUL_REFERRAL})))
        assert processed.status == "ignored"
        assert Customer.objects.get(pk=rewardful_customer.pk).processor_customer_id == "cus_First"


class TestLookups:
    def test_metadata_without_any_platforms_key_costs_no_query(self, program, django_assert_num_queries):
        with django_assert_num_queries(0):
            assert old_platform_customer(program=program, metadata={"svc_click_id": "x", "plan": "pro"}) is None

    def test_the_keys_read_per_platform(self):
        assert metadata_keys("rewardful") == ("referral",)
        assert metadata_keys("tolt") == ("tolt_referral",)
        assert {"partner_key", "customer_key", "customer_id"} <= set(metadata_keys("partnerstack"))
        assert "fp_uid" in metadata_keys("firstpromoter")
        assert {"dubCustomerExternalId", "dubCustomerId", "dub_customer_id"} <= set(metadata_keys("dub"))
        assert metadata_keys("unknown") == ()

    @pytest.mark.parametrize("value", [None, True, 12.5, {"a": 1}, ["x"], "", "   ", "x" * 256])
    def test_unusable_values_are_no_key(self, program, rewardful_customer, value):
        assert old_platform_customer(program=program, metadata={"referral": value}) is None
