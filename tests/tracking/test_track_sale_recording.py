"""POST /api/v1/track/sale: an attributed sale is stored with its fields, answered with its ids and counted
in the partner's metrics (by the next rollup run)."""

from datetime import UTC, timedelta

import pytest
from django.utils import timezone

from commissions.models import Commission
from core import messages
from programs.models import PartnerProgram
from tests.factories import ReferralLinkFactory
from tests.tracking.sales import metrics, post_sale, sale_body
from tracking.models import SaleEvent

pytestmark = pytest.mark.django_db


class TestAttributedSale:
    def test_it_answers_the_sale_and_commission_ids(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        commission = Commission.objects.get()
        assert response.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": commission.pk,
            "message": messages.SALE_RECORDED,
        }
        assert response.has_header("X-Request-ID")
        assert response["X-RateLimit-Limit"] == "120"

    def test_it_stores_every_sale_field(self, api_client, program, link, customer, frozen):
        occurred = frozen - timedelta(days=2, hours=3)
        body = sale_body(
            transaction_id="pi_3Pabc",
            amount_cents=4999,
            tax_cents=833,
            currency="EUR",
            sale_type="subscription",
            is_recurring=True,
            subscription_id="sub_42",
            subscription_interval="quarterly",
            product_id="pro_plan",
            line_items={"items": [{"sku": "pro", "qty": 1}]},
            occurred_at=occurred.isoformat(),
            provider="paddle",
            provider_payment_id="txn_01h8",
            livemode=True,
        )
        response = post_sale(api_client, program, **body)
        assert response.status_code == 200
        sale = SaleEvent.objects.get()
        assert sale.processor_event_id == "pi_3Pabc"
        assert (sale.program_id, sale.customer_id, sale.partner_id) == (
            program.pk,
            customer.pk,
            link.partner_id,
        )
        assert sale.click_id == customer.click_id
        assert (sale.amount_cents, sale.tax_cents, sale.currency) == (4999, 833, "EUR")
        assert (sale.sale_type, sale.is_recurring, sale.payment_status) == ("subscription", True, "paid")
        assert (sale.subscription_id, sale.subscription_interval) == ("sub_42", "quarterly")
        assert sale.product_id == "pro_plan"
        assert sale.line_items == {"items": [{"sku": "pro", "qty": 1}]}
        assert sale.occurred_at == occurred
        assert (sale.provider, sale.provider_payment_id) == ("paddle", "txn_01h8")
        assert sale.sale_date == frozen
        assert sale.attributed is True and sale.is_test is False

    def test_optional_fields_take_their_defaults(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body())
        sale = SaleEvent.objects.get()
        assert (sale.currency, sale.sale_type, sale.is_recurring) == ("USD", "payment", False)
        assert sale.tax_cents is None and sale.occurred_at is None and sale.line_items is None
        assert (sale.provider, sale.provider_payment_id, sale.subscription_id, sale.product_id) == (
            "",
            "",
            "",
            "",
        )

    def test_a_lower_case_currency_is_upper_cased(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(currency="eur"))
        assert response.status_code == 200
        assert SaleEvent.objects.get().currency == "EUR"
        assert Commission.objects.get().currency == "EUR"

    def test_tax_is_stored_but_the_commission_uses_the_whole_amount(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body(amount_cents=12000, tax_cents=2000))
        assert Commission.objects.get().amount_cents == 2400

    def test_the_customer_becomes_converted(self, api_client, program, customer, frozen):
        post_sale(api_client, program, **sale_body())
        customer.refresh_from_db()
        assert customer.first_sale_at == frozen
        assert customer.customer_status == "converted"

    @pytest.mark.parametrize(
        "provider",
        [
            "stripe",
            "polar",
            "dodo",
            "paddle",
            "lemonsqueezy",
            "creem",
            "sepay",
            "payos",
            "apipay",
            "x402",
            "other",
        ],
    )
    def test_every_listed_provider_is_accepted(self, api_client, program, customer, provider):
        response = post_sale(api_client, program, **sale_body(provider=provider))
        assert response.status_code == 200
        assert SaleEvent.objects.get().provider == provider

    def test_a_provider_payment_id_of_255_characters_is_accepted(self, api_client, program, customer):
        response = post_sale(api_client, program, **sale_body(provider_payment_id="p" * 255))
        assert response.status_code == 200

    @pytest.mark.parametrize("ago", [timedelta(days=29, hours=23), timedelta(0), -timedelta(minutes=4)])
    def test_occurred_at_within_the_limits_is_accepted(self, api_client, program, customer, frozen, ago):
        response = post_sale(api_client, program, **sale_body(occurred_at=(frozen - ago).isoformat()))
        assert response.status_code == 200

    def test_occurred_at_with_a_z_suffix_or_another_offset_is_accepted(self, api_client, program, customer, frozen):
        occurred = (frozen - timedelta(days=1)).astimezone(UTC)
        in_utc = occurred.strftime("%Y-%m-%dT%H:%M:%SZ")
        in_hanoi = occurred.astimezone(timezone.get_fixed_timezone(7 * 60)).isoformat()
        assert post_sale(api_client, program, **sale_body(occurred_at=in_utc)).status_code == 200
        assert (
            post_sale(api_client, program, **sale_body(transaction_id="txn_2", occurred_at=in_hanoi)).status_code == 200
        )
        assert list(SaleEvent.objects.values_list("occurred_at", flat=True)) == [occurred, occurred]


class TestMetrics:
    def test_the_partner_program_counts_the_sale_and_its_revenue(self, api_client, program, link, customer):
        PartnerProgram.objects.filter(partner=link.partner, program=program).update(sales=4, revenue_cents=40000)
        post_sale(api_client, program, **sale_body(amount_cents=5000))
        assert metrics(link) == (5, 45000)

    def test_other_partner_programs_are_untouched(self, api_client, program, customer):
        other = ReferralLinkFactory(program=program)
        post_sale(api_client, program, **sale_body())
        assert metrics(other) == (0, 0)

    def test_the_sale_itself_updates_no_counter_the_rollup_run_does(self, api_client, program, link, customer):
        assert post_sale(api_client, program, **sale_body()).status_code == 200
        row = PartnerProgram.objects.get(partner=link.partner, program=program)
        assert (row.sales, row.revenue_cents) == (0, 0)
        assert metrics(link) == (1, 10000)
