"""A Stripe payment nothing else attributes is the partner's whose promotion code it carried (tracking.stripe.codes):
signed checkout.session.completed and invoice.payment_succeeded events carrying `discounts` as Stripe sends them,
the invoice asked of the connected account (the Stripe fake) when its discounts are ids only.

Payload shapes, by field, from Stripe's API reference: Checkout Session (docs.stripe.com/api/checkout/sessions/
object: `discounts`, a list of {coupon, promotion_code}, added in 2025-01-27.acacia; `total_details.amount_discount`),
Invoice (docs.stripe.com/api/invoices/object: `discounts`, expandable Discount ids; `discount`, one Discount object,
on versions before 2025-03-31.basil; `parent.subscription_details` since basil; `total_discount_amounts`), Discount
(docs.stripe.com/api/discounts/object: `promotion_code` an id or the expanded PromotionCode; "Discounts cannot be
fetched by ID. Use expand[]=discounts"), PromotionCode (docs.stripe.com/api/promotion_codes/object: `code`,
`promotion` {type, coupon} since 2025-09-30.clover). Events are signed as Stripe signs them (tests.stripe_payloads)."""

import secrets
from decimal import Decimal
from typing import Any

import pytest
import stripe

from commissions.models import Commission
from groups.codes import code_register
from groups.models import CouponCode, PartnerGroup
from groups.stripe_codes import partner_code_create
from programs.models import Partner, PartnerProgram
from tests.factories import CustomerFactory, PartnerProgramFactory, ProgramFactory, ReferralLinkFactory
from tests.stripe_fake.server import StripeFake
from tests.stripe_payloads import ACCOUNT, checkout_session, event, invoice, post_event
from tracking.models import Customer, ProcessorEvent, SaleEvent, TrackingLog
from tracking.stripe.events import processor_event_attempt

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stripe_webhook_secret")]

# The webhook endpoint's API version the newer payloads are rendered in (the installed library's).
NEW_API_VERSION = stripe.api_version
COUPON = "Z4OV52SU"  # a coupon id as Stripe generates them (8 upper-case letters and digits)


def promo_id() -> str:
    return f"promo_1{secrets.token_hex(11)}"


def with_discounts(session: dict[str, Any], *promotion_codes: str | dict[str, Any]) -> dict[str, Any]:
    """The session as it completes with these promotion codes applied."""
    # Checkout Session `discounts`: [{coupon, promotion_code}], each an id unless expanded.
    session["discounts"] = [{"coupon": COUPON, "promotion_code": code} for code in promotion_codes]
    # `total_details`: amount_discount, amount_shipping, amount_tax (the discount's amount, here 10%).
    session["total_details"] = {"amount_discount": session["amount_total"] // 9, "amount_shipping": 0, "amount_tax": 0}
    return session


def expanded_promotion_code(promotion_code_id: str, code: str) -> dict[str, Any]:
    # The PromotionCode object, as `expand` gives it (fields as in Stripe's fixtures, openapi/fixtures3.json).
    return {
        "id": promotion_code_id,
        "object": "promotion_code",
        "active": True,
        "code": code,
        "created": 1764633600,
        "customer": None,
        "customer_account": None,
        "expires_at": None,
        "livemode": True,
        "max_redemptions": None,
        "metadata": {},
        "promotion": {"coupon": COUPON, "type": "coupon"},
        "restrictions": {"first_time_transaction": False, "minimum_amount": None, "minimum_amount_currency": None},
        "times_redeemed": 1,
    }


def legacy_discount(promotion_code_id: str, invoice_id: str) -> dict[str, Any]:
    # Invoice `discount` before 2025-03-31.basil: one Discount object, its `coupon` the Coupon object.
    return {
        "id": f"di_1{secrets.token_hex(11)}",
        "object": "discount",
        "checkout_session": None,
        "coupon": {"id": COUPON, "object": "coupon", "percent_off": 10.0, "duration": "once"},
        "customer": "cus_Buyer1",
        "end": None,
        "invoice": invoice_id,
        "invoice_item": None,
        "promotion_code": promotion_code_id,
        "start": 1764633600,
        "subscription": "sub_Abc",
        "subscription_item": None,
    }


def new_invoice(*, customer: str, discounts: list[str], amount: int = 1900) -> dict[str, Any]:
    """An Invoice as API versions from 2025-03-31.basil render it: the subscription under `parent`, no
    `payment_intent`, `discount` gone, `discounts` ids."""
    invoice_id = f"in_1{secrets.token_hex(11)}"
    return {
        "id": invoice_id,
        "object": "invoice",
        "amount_due": amount,
        "amount_paid": amount,
        "amount_remaining": 0,
        "billing_reason": "subscription_create",
        "currency": "usd",
        "customer": customer,
        "customer_email": "buyer@example.com",
        "discounts": discounts,
        "lines": {
            "object": "list",
            "data": [
                {
                    "id": f"il_1{secrets.token_hex(11)}",
                    "object": "line_item",
                    "amount": amount,
                    "currency": "usd",
                    "metadata": {},
                    "pricing": {"type": "price_details", "price_details": {"price": "price_1", "product": "prod_Pro"}},
                }
            ],
            "has_more": False,
            "url": f"/v1/invoices/{invoice_id}/lines",
        },
        "livemode": True,
        "parent": {
            "type": "subscription_details",
            "quote_details": None,
            "subscription_details": {"metadata": {}, "subscription": "sub_Abc"},
        },
        "status": "paid",
        "total_discount_amounts": [{"amount": 211, "discount": d} for d in discounts],
    }


@pytest.fixture
def program():
    return ProgramFactory(stripe_account_id=ACCOUNT, hold_days=0, commission_rate=20)


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks):
    def send(payload: dict[str, Any]) -> ProcessorEvent:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_event(client, payload)
        assert response.status_code == 200, response.content
        return ProcessorEvent.objects.get(event_id=payload["id"])

    return send


def partner_with_code(program, code: str, promotion_code_id: str = "") -> Partner:
    enrolment: PartnerProgram = PartnerProgramFactory.create(program=program)
    code_register(
        program=program,
        partner=enrolment.partner,
        code=code,
        source=CouponCode.Source.STRIPE if promotion_code_id else CouponCode.Source.MANUAL,
        stripe_promotion_code_id=promotion_code_id,
    )
    return enrolment.partner


def guest_checkout(**fields: Any) -> dict[str, Any]:
    """A one-time checkout no step of the spec attributes: no click, an email and a Stripe customer never seen."""
    values = {"email": f"new{secrets.token_hex(4)}@example.com", "customer": f"cus_{secrets.token_hex(7)}", **fields}
    return checkout_session(**values)


class TestCheckoutSession:
    def test_the_promotion_code_credits_its_partner(self, deliver, program):
        promotion = promo_id()
        jane = partner_with_code(program, "JANE20", promotion)
        session = with_discounts(guest_checkout(amount=4500), promotion)

        stored = deliver(event("checkout.session.completed", session))

        sale = SaleEvent.objects.get()
        assert stored.status == "processed" and "attributed by promotion_code" in stored.outcome
        assert (sale.partner, sale.attributed, sale.attributed_by) == (jane, True, "stripe:promotion_code")
        assert Commission.objects.get(sale=sale).amount_cents == 900
        customer = sale.customer
        assert customer.first_partner == jane and customer.click_id.startswith("coupon_")
        # Later payments of this Stripe customer follow it (step 3), code or not.
        assert customer.processor_customer_id == session["customer"]

    def test_a_click_still_wins_over_the_code(self, deliver, program):
        clicked = CustomerFactory(link=ReferralLinkFactory(program=program))
        promotion = promo_id()
        partner_with_code(program, "JANE20", promotion)
        session = with_discounts(guest_checkout(metadata={"svc_click_id": clicked.click_id}), promotion)

        stored = deliver(event("checkout.session.completed", session))

        sale = SaleEvent.objects.get()
        assert sale.customer == clicked and sale.partner == clicked.first_partner
        assert "attributed by svc_click_id" in stored.outcome
        assert Customer.objects.filter(program=program).count() == 1

    def test_a_deactivated_partners_code_does_not_attribute(self, deliver, program):
        promotion = promo_id()
        jane = partner_with_code(program, "JANE20", promotion)
        Partner.objects.filter(pk=jane.pk).update(is_active=False)

        stored = deliver(event("checkout.session.completed", with_discounts(guest_checkout(), promotion)))

        sale = SaleEvent.objects.get()
        assert not sale.attributed and sale.partner is None and "unattributed" in stored.outcome
        assert not Customer.objects.filter(program=program).exists()
        log = TrackingLog.objects.get(program=program, outcome="unattributed")
        assert log.details == {
            "sale_id": sale.pk,
            "transaction_id": sale.processor_event_id,
            "promotion_code": promotion,
            "coupon_code": "JANE20",
        }

    def test_a_deactivated_code_does_not_attribute(self, deliver, program):
        promotion = promo_id()
        partner_with_code(program, "JANE20", promotion)
        CouponCode.objects.update(is_active=False)
        deliver(event("checkout.session.completed", with_discounts(guest_checkout(), promotion)))
        assert not SaleEvent.objects.get().attributed

    def test_an_expanded_promotion_code_is_found_by_its_code(self, deliver, program):
        # Registered by hand (no promotion code id): the expanded object's `code` finds it.
        bob = partner_with_code(program, "BOB10")
        session = with_discounts(guest_checkout(), expanded_promotion_code(promo_id(), "bob10"))
        deliver(event("checkout.session.completed", session))
        assert SaleEvent.objects.get().partner == bob

    def test_the_first_code_a_partner_holds_wins(self, deliver, program):
        held = promo_id()
        bob = partner_with_code(program, "BOB10", held)
        session = with_discounts(guest_checkout(), expanded_promotion_code(promo_id(), "NOBODY"), held)
        deliver(event("checkout.session.completed", session))
        assert SaleEvent.objects.get().partner == bob

    def test_a_payment_delivered_twice_makes_one_sale_and_one_customer(self, deliver, program):
        promotion = promo_id()
        partner_with_code(program, "JANE20", promotion)
        session = with_discounts(guest_checkout(customer=None), promotion)
        deliver(event("checkout.session.completed", session))
        again = deliver(event("checkout.session.completed", session))  # another event id, the same payment
        assert again.outcome == f"already recorded as sale #{SaleEvent.objects.get().pk}"
        assert Customer.objects.filter(program=program).count() == 1

    def test_an_unknown_code_leaves_the_sale_unattributed_and_is_logged(self, deliver, program):
        session = with_discounts(guest_checkout(), expanded_promotion_code(promo_id(), "jane20"))
        deliver(event("checkout.session.completed", session))
        assert not SaleEvent.objects.get().attributed
        assert TrackingLog.objects.get(program=program, outcome="unattributed").details["coupon_code"] == "JANE20"

    def test_a_payment_without_discounts_logs_nothing(self, deliver, program):
        session = guest_checkout()
        session["discounts"] = None  # Checkout Session `discounts`: nullable
        deliver(event("checkout.session.completed", session))
        assert not SaleEvent.objects.get().attributed and not TrackingLog.objects.exists()

    def test_a_test_mode_payment_is_not_attributed_by_its_code(self, deliver, program):
        promotion = promo_id()
        partner_with_code(program, "JANE20", promotion)
        deliver(event("checkout.session.completed", with_discounts(guest_checkout(), promotion), livemode=False))
        sale = SaleEvent.objects.get()
        assert sale.is_test and not sale.attributed and not Customer.objects.exists()


class TestCodeMadeByTheService:
    def test_a_checkout_with_the_code_pays_its_partner_at_the_groups_terms(self, deliver, stripe_server: StripeFake):
        account = stripe_server.create_account()["id"]
        program = ProgramFactory.create(stripe_account_id=account, hold_days=0, commission_rate=20)
        gold = PartnerGroup.objects.create(
            program=program,
            name="Gold",
            slug="gold",
            commission_rate=Decimal("30"),
            discount_type="percent",
            discount_percent=Decimal("10"),
        )
        enrolment: PartnerProgram = PartnerProgramFactory.create(program=program, group=gold)
        code = partner_code_create(program=program, partner=enrolment.partner, code="GOLD10")
        # The buyer types GOLD10 at checkout: the session names the promotion code the service made.
        session = with_discounts(guest_checkout(amount=10000), code.stripe_promotion_code_id)

        deliver(event("checkout.session.completed", session, account=account))

        commission = Commission.objects.get()
        assert (commission.partner, commission.amount_cents, commission.group) == (enrolment.partner, 3000, gold)
        # Found by the promotion code's id: nothing was asked of Stripe after the code was made.
        assert [r.path for r in stripe_server.requests] == ["/v1/coupons", "/v1/promotion_codes"]


class TestInvoice:
    def test_a_legacy_discount_object_credits_the_code_without_asking_stripe(self, deliver, program):
        promotion = promo_id()
        jane = partner_with_code(program, "JANE20", promotion)
        paid = invoice(customer="cus_Legacy1", email="new@example.com")
        discount = legacy_discount(promotion, paid["id"])
        # API 2024-06-20 (the event's): `discount` the object, `discounts` its id.
        paid["discount"], paid["discounts"] = discount, [discount["id"]]

        stored = deliver(event("invoice.payment_succeeded", paid))

        assert stored.status == "processed", stored.outcome
        assert SaleEvent.objects.get().partner == jane

    def test_a_legacy_discount_answering_for_its_id_asks_nothing_even_with_the_key(
        self, deliver, stripe_server: StripeFake
    ):
        account = stripe_server.create_account()["id"]
        program = ProgramFactory.create(stripe_account_id=account, hold_days=0)
        promotion = promo_id()
        jane = partner_with_code(program, "JANE20", promotion)
        paid = invoice(customer="cus_Legacy2", email="new2@example.com")
        discount = legacy_discount(promotion, paid["id"])
        paid["discount"], paid["discounts"] = discount, [discount["id"]]
        deliver(event("invoice.payment_succeeded", paid, account=account))
        assert SaleEvent.objects.get().partner == jane and stripe_server.requests == []

    def test_ids_only_are_asked_of_the_connected_account_expanded(self, deliver, stripe_server: StripeFake):
        account = stripe_server.create_account()["id"]
        program = ProgramFactory(stripe_account_id=account, hold_days=0)
        promotion = stripe_server.promotion_code_make(account, "JANE20")
        jane = partner_with_code(program, "JANE20", promotion["id"])
        paid = new_invoice(customer="cus_New1", discounts=[])
        discount = stripe_server.discount_make(account, promotion["id"], invoice=paid["id"])
        paid["discounts"] = [discount["id"]]
        stripe_server.invoice_store(account, paid)
        payload = event("invoice.payment_succeeded", paid, account=account)
        payload["api_version"] = NEW_API_VERSION

        stored = deliver(payload)

        sale = SaleEvent.objects.get()
        assert stored.status == "processed" and sale.partner == jane and sale.sale_type == "subscription"
        [asked] = [r for r in stripe_server.requests if r.path == f"/v1/invoices/{paid['id']}"]
        assert asked.status == 200

        # The renewal carries no code: the Stripe customer the first payment tied finds the partner (step 3).
        renewal = new_invoice(customer="cus_New1", discounts=[])
        renewal["billing_reason"] = "subscription_cycle"
        renewed = deliver(event("invoice.payment_succeeded", renewal, account=account))
        assert "attributed by processor_customer_id" in renewed.outcome
        assert SaleEvent.objects.filter(partner=jane).count() == 2

    def test_a_code_made_in_stripe_and_registered_by_hand_is_found_by_asking(self, deliver, stripe_server: StripeFake):
        account = stripe_server.create_account()["id"]
        program = ProgramFactory(stripe_account_id=account, hold_days=0)
        # The owner made BOB10 in their Stripe dashboard and registered it here as it is.
        promotion = stripe_server.promotion_code_make(account, "BOB10")
        bob = partner_with_code(program, "BOB10")
        session = with_discounts(guest_checkout(), promotion["id"])
        deliver(event("checkout.session.completed", session, account=account))
        assert SaleEvent.objects.get().partner == bob
        assert [r.path for r in stripe_server.requests] == [f"/v1/promotion_codes/{promotion['id']}"]

    def test_a_session_of_an_older_api_version_is_asked_for_its_discounts(self, deliver, stripe_server: StripeFake):
        account = stripe_server.create_account()["id"]
        program = ProgramFactory(stripe_account_id=account, hold_days=0)
        promotion = stripe_server.promotion_code_make(account, "JANE20")
        jane = partner_with_code(program, "JANE20", promotion["id"])
        session = with_discounts(guest_checkout(), promotion["id"])
        stripe_server.checkout_session_store(account, session)
        # Before 2025-01-27.acacia a Checkout Session has no `discounts`; `total_details` tells it was discounted.
        older = {key: value for key, value in session.items() if key != "discounts"}

        deliver(event("checkout.session.completed", older, account=account))  # the event's api_version: 2024-06-20

        assert SaleEvent.objects.get().partner == jane
        assert [r.path for r in stripe_server.requests] == [f"/v1/checkout/sessions/{session['id']}"]

    def test_an_older_session_without_a_discount_asks_nothing(self, deliver, stripe_server: StripeFake):
        account = stripe_server.create_account()["id"]
        ProgramFactory(stripe_account_id=account, hold_days=0)
        session = guest_checkout()
        session["total_details"] = {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0}
        deliver(event("checkout.session.completed", session, account=account))
        assert not SaleEvent.objects.get().attributed and stripe_server.requests == []

    def test_stripe_down_the_event_fails_and_its_retry_attributes_once(self, client, stripe_server: StripeFake):
        account = stripe_server.create_account()["id"]
        program = ProgramFactory(stripe_account_id=account, hold_days=0)
        promotion = stripe_server.promotion_code_make(account, "JANE20")
        jane = partner_with_code(program, "JANE20", promotion["id"])
        paid = new_invoice(customer="cus_New2", discounts=[])
        paid["discounts"] = [stripe_server.discount_make(account, promotion["id"], invoice=paid["id"])["id"]]
        stripe_server.invoice_store(account, paid)
        stripe_server.fail_next("GET /v1/invoices/*")
        payload = event("invoice.payment_succeeded", paid, account=account)
        assert post_event(client, payload).status_code == 200  # stored; its processing is the worker's
        stored = ProcessorEvent.objects.get(event_id=payload["id"])

        with pytest.raises(stripe.APIError):
            processor_event_attempt(event_pk=stored.pk)
        stored.refresh_from_db()
        assert stored.status == "failed"
        assert not SaleEvent.objects.exists() and not Customer.objects.exists()

        assert processor_event_attempt(event_pk=stored.pk) == "processed"
        assert processor_event_attempt(event_pk=stored.pk) == "processed"
        assert SaleEvent.objects.get().partner == jane and Customer.objects.count() == 1
