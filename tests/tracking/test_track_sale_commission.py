"""POST /api/v1/track/sale: the commission a sale earns (amounts, recurring periods, product rates), the
hold and the ledger."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from commissions.models import Commission, LedgerEntry, ProductCommissionRate
from core import messages
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer
from tests.tracking.sales import REFUND_URL, metrics, post_sale, program_with, sale_body
from tracking.models import SaleEvent

pytestmark = pytest.mark.django_db


class TestCommissionAmounts:
    @pytest.mark.parametrize(
        ("rate", "amount", "expected"),
        [
            ("20", 10000, 2000),
            ("15", 1010, 152),  # 151.5 rounds half up
            ("15", 1003, 150),  # 150.45 rounds down
            ("12.5", 100, 13),  # 12.5 rounds up, not to even
            ("2.5", 20, 1),  # 0.5 rounds up
            ("100", 777, 777),
        ],
    )
    def test_percent_is_the_rate_of_the_amount_rounded_half_up(self, api_client, link, rate, amount, expected):
        program = program_with(link, commission_type="percent", commission_rate=Decimal(rate))
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(amount_cents=amount))
        assert Commission.objects.get().amount_cents == expected

    def test_percent_pays_every_sale_of_a_customer(self, api_client, program, link, customer):
        first = post_sale(api_client, program, **sale_body(transaction_id="t1"))
        second = post_sale(api_client, program, **sale_body(transaction_id="t2", amount_cents=3000))
        assert second.status_code == 200
        sale = SaleEvent.objects.get(processor_event_id="t2")
        commission = Commission.objects.get(sale=sale)
        assert second.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": commission.pk,
            "message": messages.SALE_RECORDED,
        }
        assert first.json()["commission_id"] != commission.pk
        assert sorted(Commission.objects.values_list("amount_cents", flat=True)) == [600, 2000]
        assert metrics(link) == (2, 13000)

    def test_fixed_pays_the_rate_on_every_sale_whatever_the_amount(self, api_client, link):
        program = program_with(link, commission_type="fixed", commission_rate=Decimal("500"))
        CustomerFactory(link=link, customer_key="user_1")
        first = post_sale(api_client, program, **sale_body(transaction_id="t1", amount_cents=99))
        second = post_sale(api_client, program, **sale_body(transaction_id="t2", amount_cents=100000))
        assert Commission.objects.get(pk=first.json()["commission_id"]).amount_cents == 500
        assert Commission.objects.get(pk=second.json()["commission_id"]).amount_cents == 500
        assert second.json()["message"] == messages.SALE_RECORDED

    @pytest.mark.parametrize("commission_type", ["percent", "fixed"])
    def test_a_renewal_on_a_one_off_program_is_stored_without_commission(self, api_client, link, commission_type):
        program = program_with(link, commission_type=commission_type, commission_rate=Decimal("20"))
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="sub_first", sale_type="subscription"))
        renewal = post_sale(
            api_client, program, **sale_body(transaction_id="sub_cycle_2", sale_type="subscription", is_recurring=True)
        )
        assert renewal.status_code == 200
        sale = SaleEvent.objects.get(processor_event_id="sub_cycle_2")
        assert renewal.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": None,
            "message": messages.SALE_RECORDED_RENEWAL_NOT_PAID,
        }
        assert sale.no_commission_reason == "renewal_not_recurring"
        assert Commission.objects.count() == 1
        assert metrics(link) == (2, 20000)  # the renewal still counts as a sale

    def test_a_renewal_as_the_first_sale_converts_the_customer_without_commission(
        self, api_client, program, customer, frozen
    ):
        renewal = post_sale(api_client, program, **sale_body(is_recurring=True))
        assert renewal.json()["commission_id"] is None
        assert renewal.json()["message"] == messages.SALE_RECORDED_RENEWAL_NOT_PAID
        customer.refresh_from_db()
        assert (customer.customer_status, customer.first_sale_at) == ("converted", frozen)
        assert not Commission.objects.exists()

    def test_a_renewal_resent_is_a_duplicate_and_stays_unpaid(self, api_client, program, customer):
        post_sale(api_client, program, **sale_body(is_recurring=True))
        again = post_sale(api_client, program, **sale_body(is_recurring=True))
        assert again.status_code == 409
        assert not Commission.objects.exists()

    @pytest.mark.parametrize("commission_type", ["recurring_percent", "recurring_fixed"])
    def test_recurring_types_pay_renewals(self, api_client, link, commission_type):
        program = program_with(link, commission_type=commission_type, commission_rate=Decimal("10"), duration_months=12)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="inv_1", sale_type="subscription"))
        renewal = post_sale(
            api_client, program, **sale_body(transaction_id="inv_2", sale_type="subscription", is_recurring=True)
        )
        assert renewal.json()["message"] == messages.SALE_RECORDED
        assert Commission.objects.get(pk=renewal.json()["commission_id"]).sale.is_recurring is True

    def test_recurring_percent_pays_every_sale(self, api_client, link):
        program = program_with(link, commission_type="recurring_percent", commission_rate=Decimal("30"))
        CustomerFactory(link=link, customer_key="user_1")
        for n, amount in enumerate([1000, 2000, 3333]):
            response = post_sale(api_client, program, **sale_body(transaction_id=f"inv_{n}", amount_cents=amount))
            assert response.json()["message"] == messages.SALE_RECORDED
        assert sorted(Commission.objects.values_list("amount_cents", flat=True)) == [300, 600, 1000]
        assert metrics(link) == (3, 6333)

    def test_recurring_fixed_pays_every_sale(self, api_client, link):
        program = program_with(link, commission_type="recurring_fixed", commission_rate=Decimal("250"))
        CustomerFactory(link=link, customer_key="user_1")
        for n in range(3):
            post_sale(api_client, program, **sale_body(transaction_id=f"inv_{n}", amount_cents=1000 + n))
        assert list(Commission.objects.values_list("amount_cents", flat=True)) == [250, 250, 250]

    @pytest.mark.parametrize("commission_type", ["recurring_percent", "recurring_fixed"])
    def test_recurring_stops_after_duration_months(self, api_client, link, time_machine, commission_type):
        program = program_with(link, commission_type=commission_type, commission_rate=Decimal("10"), duration_months=3)
        time_machine.move_to(datetime(2025, 1, 15, 9, tzinfo=UTC), tick=False)
        CustomerFactory(link=link, customer_key="user_1")
        assert post_sale(api_client, program, **sale_body(transaction_id="jan")).json()["commission_id"]
        time_machine.move_to(datetime(2025, 4, 15, 8, 59, 59, tzinfo=UTC), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="apr")).json()["commission_id"]
        time_machine.move_to(datetime(2025, 4, 15, 9, tzinfo=UTC), tick=False)
        late = post_sale(api_client, program, **sale_body(transaction_id="apr_late", is_recurring=True))
        assert late.status_code == 200
        sale = SaleEvent.objects.get(processor_event_id="apr_late")
        assert late.json() == {
            "success": True,
            "sale_id": sale.pk,
            "commission_id": None,
            "message": messages.SALE_RECORDED_RECURRING_ENDED.format(months=3),
        }
        assert "3 months" in late.json()["message"]
        assert sale.no_commission_reason == "recurring_period_ended"
        assert Commission.objects.count() == 2
        assert SaleEvent.objects.count() == 3

    def test_the_recurring_period_runs_from_the_first_commissioned_sale(self, api_client, link, time_machine):
        """A renewal stored without commission while the program was percent does not start the period."""
        program = program_with(link, commission_type="percent", commission_rate=Decimal("10"), duration_months=1)
        time_machine.move_to(datetime(2025, 1, 10, tzinfo=UTC), tick=False)
        CustomerFactory(link=link, customer_key="user_1")
        assert (
            post_sale(api_client, program, **sale_body(transaction_id="jan", is_recurring=True)).json()["commission_id"]
            is None
        )
        program = program_with(link, commission_type="recurring_percent")
        time_machine.move_to(datetime(2025, 3, 1, tzinfo=UTC), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="mar", is_recurring=True)).json()[
            "commission_id"
        ]
        time_machine.move_to(datetime(2025, 3, 31, tzinfo=UTC), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="mar_end", is_recurring=True)).json()[
            "commission_id"
        ]
        time_machine.move_to(datetime(2025, 4, 1, tzinfo=UTC), tick=False)
        late = post_sale(api_client, program, **sale_body(transaction_id="apr", is_recurring=True))
        assert late.json()["message"] == messages.SALE_RECORDED_RECURRING_ENDED.format(months=1)

    def test_a_refund_does_not_restart_the_recurring_period(self, api_client, link, time_machine):
        program = program_with(
            link, commission_type="recurring_fixed", commission_rate=Decimal("100"), duration_months=1
        )
        time_machine.move_to(datetime(2025, 1, 10, tzinfo=UTC), tick=False)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="jan"))
        refund = api_client.post(REFUND_URL, {"transaction_id": "jan"}, format="json", **bearer(program.raw_api_key))
        assert refund.json()["status"] == "reversed"
        time_machine.move_to(datetime(2025, 2, 10, tzinfo=UTC), tick=False)
        late = post_sale(api_client, program, **sale_body(transaction_id="feb", is_recurring=True))
        assert late.json()["commission_id"] is None
        assert late.json()["message"] == messages.SALE_RECORDED_RECURRING_ENDED.format(months=1)

    def test_duration_zero_is_lifetime(self, api_client, link, time_machine):
        program = program_with(
            link, commission_type="recurring_fixed", commission_rate=Decimal("100"), duration_months=0
        )
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="first"))
        time_machine.move_to(timezone.now() + timedelta(days=3 * 365), tick=False)
        assert post_sale(api_client, program, **sale_body(transaction_id="years_later")).json()["commission_id"]

    def test_a_product_rate_overrides_the_programs_policy(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program, product_id="pro_yearly", commission_type="fixed", commission_rate=Decimal("1500")
        )
        post_sale(api_client, program, **sale_body(product_id="pro_yearly", amount_cents=50000))
        assert Commission.objects.get().amount_cents == 1500

    def test_a_product_without_a_rate_uses_the_programs_policy(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program, product_id="pro_yearly", commission_type="fixed", commission_rate=Decimal("1500")
        )
        post_sale(api_client, program, **sale_body(product_id="starter", amount_cents=50000))
        assert Commission.objects.get().amount_cents == 10000

    def test_a_product_rate_of_another_program_is_ignored(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=ProgramFactory(),
            product_id="pro_yearly",
            commission_type="fixed",
            commission_rate=Decimal("1"),
        )
        post_sale(api_client, program, **sale_body(product_id="pro_yearly", amount_cents=50000))
        assert Commission.objects.get().amount_cents == 10000

    def test_a_recurring_product_rate_pays_renewals_of_that_product_only(self, api_client, program, customer):
        ProductCommissionRate.objects.create(
            program=program,
            product_id="addon",
            commission_type="recurring_percent",
            commission_rate=Decimal("50"),
        )
        post_sale(api_client, program, **sale_body(transaction_id="t1", product_id="base"))
        addon = post_sale(
            api_client,
            program,
            **sale_body(transaction_id="t2", product_id="addon", amount_cents=800, is_recurring=True),
        )
        base_renewal = post_sale(
            api_client, program, **sale_body(transaction_id="t3", product_id="base", is_recurring=True)
        )
        base_again = post_sale(api_client, program, **sale_body(transaction_id="t4", product_id="base"))
        assert Commission.objects.get(pk=addon.json()["commission_id"]).amount_cents == 400
        assert base_renewal.json()["commission_id"] is None
        assert base_renewal.json()["message"] == messages.SALE_RECORDED_RENEWAL_NOT_PAID
        assert Commission.objects.get(pk=base_again.json()["commission_id"]).amount_cents == 2000

    def test_a_one_off_product_rate_on_a_recurring_program_does_not_pay_renewals(self, api_client, link):
        program = program_with(link, commission_type="recurring_percent", commission_rate=Decimal("10"))
        CustomerFactory(link=link, customer_key="user_1")
        ProductCommissionRate.objects.create(
            program=program, product_id="setup_fee", commission_type="fixed", commission_rate=Decimal("700")
        )
        setup = post_sale(api_client, program, **sale_body(transaction_id="t1", product_id="setup_fee"))
        again = post_sale(
            api_client, program, **sale_body(transaction_id="t2", product_id="setup_fee", is_recurring=True)
        )
        plan = post_sale(api_client, program, **sale_body(transaction_id="t3", product_id="plan", is_recurring=True))
        assert Commission.objects.get(pk=setup.json()["commission_id"]).amount_cents == 700
        assert again.json()["message"] == messages.SALE_RECORDED_RENEWAL_NOT_PAID
        assert Commission.objects.get(pk=plan.json()["commission_id"]).amount_cents == 1000

    def test_the_recurring_period_of_a_product_rate_uses_the_programs_duration(self, api_client, program, time_machine):
        program.duration_months = 2
        program.save()
        ProductCommissionRate.objects.create(
            program=program, product_id="plan", commission_type="recurring_fixed", commission_rate=Decimal("300")
        )
        time_machine.move_to(datetime(2025, 1, 10, tzinfo=UTC), tick=False)
        CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="jan", product_id="plan"))
        time_machine.move_to(datetime(2025, 3, 9, tzinfo=UTC), tick=False)
        assert post_sale(
            api_client, program, **sale_body(transaction_id="mar", product_id="plan", is_recurring=True)
        ).json()["commission_id"]
        time_machine.move_to(datetime(2025, 3, 10, tzinfo=UTC), tick=False)
        late = post_sale(
            api_client, program, **sale_body(transaction_id="mar_late", product_id="plan", is_recurring=True)
        )
        assert late.json()["message"] == messages.SALE_RECORDED_RECURRING_ENDED.format(months=2)

    def test_vnd_amounts_are_whole_units_without_conversion(self, api_client, program, link, customer):
        post_sale(api_client, program, **sale_body(amount_cents=1_499_999, currency="VND"))
        commission = Commission.objects.get()
        assert (commission.amount_cents, commission.currency) == (300_000, "VND")  # 299999.8 rounds up
        assert SaleEvent.objects.get().amount_cents == 1_499_999
        assert metrics(link) == (1, 1_499_999)


class TestHoldAndLedger:
    def test_a_hold_period_leaves_the_commission_pending_and_uncredited(
        self, api_client, program, link, customer, frozen
    ):
        post_sale(api_client, program, **sale_body())
        commission = Commission.objects.get()
        assert (commission.status, commission.credited, commission.approved_at) == ("pending", False, None)
        assert commission.hold_until == frozen + timedelta(days=30)
        assert (commission.program_id, commission.partner_id, commission.customer_id) == (
            program.pk,
            link.partner_id,
            customer.pk,
        )
        assert commission.sale_id == SaleEvent.objects.get().pk
        assert not LedgerEntry.objects.exists()

    def test_no_hold_approves_and_credits_at_once(self, api_client, link, frozen):
        program = program_with(link, hold_days=0)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(currency="EUR"))
        commission = Commission.objects.get()
        assert (commission.status, commission.credited, commission.approved_at) == ("approved", True, frozen)
        assert commission.hold_until == frozen
        entry = LedgerEntry.objects.get()
        assert (entry.kind, entry.amount_cents, entry.currency) == ("credit", 2000, "EUR")
        assert (entry.partner_id, entry.program_id, entry.commission_id) == (
            link.partner_id,
            program.pk,
            commission.pk,
        )

    def test_a_sale_without_commission_writes_no_ledger_entry(self, api_client, link):
        program = program_with(link, hold_days=0)
        CustomerFactory(link=link, customer_key="user_1")
        post_sale(api_client, program, **sale_body(transaction_id="t1"))
        post_sale(api_client, program, **sale_body(transaction_id="t2", is_recurring=True))
        assert LedgerEntry.objects.count() == 1
