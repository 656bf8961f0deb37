"""sale_velocity and visitor_velocity over HTTP (off by default): more than `threshold` sales from one click id,
or customers from one visitor, within the window hold the commission that goes over; earlier ones are left."""

from datetime import timedelta
from typing import Any

import pytest

from commissions.approval import commissions_approve_due
from commissions.services import commission_release
from fraud.config import rule_update
from fraud.rules import Rule
from tests.factories import ReferralLinkFactory

from .flow import (
    FIREFOX_UA,
    OTHER_IP,
    assert_ledger_consistent,
    click,
    click_id_of,
    commission_of,
    lead,
    sale,
)

pytestmark = pytest.mark.django_db


class TestSaleVelocity:
    @pytest.fixture(autouse=True)
    def _rule_on(self, program):
        rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, enabled=True, threshold=2)

    @pytest.fixture
    def buyer(self, api_client, program, link) -> str:
        click_id = click_id_of(click(api_client, link))
        assert lead(api_client, program, click_id=click_id, customer_key="user_1").status_code == 200
        return "user_1"

    def sales(self, api_client, program, count: int, start: int = 1) -> list[Any]:
        return [
            commission_of(sale(api_client, program, customer_key="user_1", transaction_id=f"txn_{n}"))
            for n in range(start, start + count)
        ]

    def test_the_sale_over_the_threshold_is_held_and_the_earlier_ones_untouched(
        self, api_client, program, buyer, partner, clock
    ):
        first, second, third = self.sales(api_client, program, 3)
        for earlier in (first, second):
            earlier.refresh_from_db()
            assert (earlier.flags, earlier.held_at, earlier.hold_rule) == ([], None, "")
        assert third.hold_rule == Rule.SALE_VELOCITY and third.flags == [Rule.SALE_VELOCITY]
        assert "3 sales" in third.hold_reason
        clock.shift(timedelta(days=31))
        assert commissions_approve_due() == 2
        assert_ledger_consistent(partner)
        commission_release(commission_id=third.pk, actor="user:owner")
        assert_ledger_consistent(partner)

    def test_sales_by_click_id_count_like_sales_by_customer_key(self, api_client, program, link):
        click_id = click_id_of(click(api_client, link))
        made = [commission_of(sale(api_client, program, click_id=click_id, transaction_id=f"t{n}")) for n in range(3)]
        assert [commission.hold_rule for commission in made] == ["", "", Rule.SALE_VELOCITY]

    def test_sales_outside_the_window_do_not_count(self, api_client, program, buyer, clock):
        self.sales(api_client, program, 2)
        clock.shift(timedelta(hours=25))
        [later] = self.sales(api_client, program, 1, start=3)
        assert (later.flags, later.held_at) == ([], None)

    def test_another_customers_sales_do_not_count(self, api_client, program, link, buyer):
        self.sales(api_client, program, 2)
        other = click_id_of(click(api_client, link, ip=OTHER_IP))
        commission = commission_of(sale(api_client, program, click_id=other, transaction_id="other"))
        assert commission.flags == []

    def test_off_by_default(self, api_client, program, buyer):
        rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, enabled=False)
        assert [commission.flags for commission in self.sales(api_client, program, 4)] == [[]] * 4


class TestVisitorVelocity:
    @pytest.fixture(autouse=True)
    def _rule_on(self, program):
        rule_update(program_id=program.pk, rule=Rule.VISITOR_VELOCITY, enabled=True, threshold=2)

    @pytest.fixture
    def links(self, program, partner, link):
        return [link, *(ReferralLinkFactory(program=program, partner=partner) for _ in range(2))]

    def test_a_sale_of_one_of_three_customers_from_one_visitor_is_held(self, api_client, program, links, partner):
        click_ids = [click_id_of(click(api_client, each)) for each in links]
        assert len(set(click_ids)) == 3
        commission = commission_of(sale(api_client, program, click_id=click_ids[1]))
        assert (commission.hold_rule, commission.flags) == (Rule.VISITOR_VELOCITY, [Rule.VISITOR_VELOCITY])
        assert "3 customers" in commission.hold_reason
        # Whichever customer of the burst buys: the first one is caught too.
        first = commission_of(sale(api_client, program, click_id=click_ids[0], transaction_id="txn_2"))
        assert first.hold_rule == Rule.VISITOR_VELOCITY
        assert_ledger_consistent(partner)

    def test_repeated_clicks_on_one_link_without_existing_click_id_make_customers_that_count(
        self, api_client, program, link
    ):
        click_ids = [click_id_of(click(api_client, link)) for _ in range(3)]
        commission = commission_of(sale(api_client, program, click_id=click_ids[2]))
        assert commission.hold_rule == Rule.VISITOR_VELOCITY

    def test_two_customers_are_within_the_threshold(self, api_client, program, links):
        click_ids = [click_id_of(click(api_client, each)) for each in links[:2]]
        assert commission_of(sale(api_client, program, click_id=click_ids[0])).flags == []

    def test_other_visitors_do_not_count(self, api_client, program, links):
        visitors = [{}, {"ip": OTHER_IP}, {"user_agent": FIREFOX_UA}]
        click_ids = [click_id_of(click(api_client, each, **who)) for each, who in zip(links, visitors, strict=True)]
        assert commission_of(sale(api_client, program, click_id=click_ids[0])).flags == []

    def test_customers_outside_the_window_do_not_count(self, api_client, program, links, clock):
        click_ids = []
        for each in links:
            click_ids.append(click_id_of(click(api_client, each)))
            clock.shift(timedelta(minutes=61))
        assert commission_of(sale(api_client, program, click_id=click_ids[1])).flags == []

    def test_a_bots_clicks_make_no_customers_to_count(self, api_client, program, links):
        bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
        for each in links:
            click(api_client, each, user_agent=bot)
        human = click_id_of(click(api_client, links[0]))
        assert commission_of(sale(api_client, program, click_id=human)).flags == []
