"""paid_ads over HTTP (off by default): on a program that turns it on, an ad network's click id in the landing URL
flags the click and its customer, and the sale that customer brings is held (or only flagged)."""

import pytest

from commissions.models import CommissionReview
from fraud.config import rule_update
from fraud.rules import Action, Rule, Traffic
from tracking.models import ClickEvent, Customer

from .flow import (
    assert_ledger_consistent,
    click,
    click_id_of,
    commission_of,
    link_clicks,
    referred_sale,
    reviews_of,
    sale,
)

pytestmark = pytest.mark.django_db

PAID = Rule.PAID_ADS.value


@pytest.fixture
def forbids_ads(program):
    rule_update(program_id=program.pk, rule=Rule.PAID_ADS, enabled=True)
    return program


def test_a_click_with_an_ad_click_id_is_flagged_and_still_counted(api_client, forbids_ads, link):
    click_id = click_id_of(click(api_client, link, query="&gclid=abc"))
    event = ClickEvent.objects.get()
    assert (event.flags, event.traffic) == ([PAID], Traffic.HUMAN)
    assert Customer.objects.get(click_id=click_id).click_flags == [PAID]
    assert link_clicks(link) == 1


@pytest.mark.parametrize("query", ["&fbclid=x", "&MSCLKID=x", "&ttclid=x&utm_source=tiktok"])
def test_other_networks_click_ids_are_flagged(api_client, forbids_ads, link, query):
    click(api_client, link, query=query)
    assert ClickEvent.objects.get().flags == [PAID]


def test_the_sale_of_that_customer_is_held_with_the_rule(api_client, forbids_ads, link, partner):
    click_id = click_id_of(click(api_client, link, query="&gclid=abc"))
    commission = commission_of(sale(api_client, forbids_ads, click_id=click_id))
    assert (commission.hold_rule, commission.flags) == (PAID, [PAID])
    assert commission.held_at is not None and PAID in commission.hold_reason
    assert reviews_of(commission) == [(CommissionReview.Action.HELD, PAID, "rule")]
    assert not commission.credited
    assert_ledger_consistent(partner)


def test_a_click_without_ad_ids_is_not_flagged(api_client, forbids_ads, link, partner):
    click_id = click_id_of(click(api_client, link, query="&utm_source=newsletter&gclid="))
    assert ClickEvent.objects.get().flags == []
    commission = commission_of(sale(api_client, forbids_ads, click_id=click_id))
    assert (commission.flags, commission.held_at) == ([], None)


def test_with_the_rule_off_nothing_is_flagged(api_client, program, link, partner):
    click_id = click_id_of(click(api_client, link, query="&gclid=abc"))
    assert ClickEvent.objects.get().flags == []
    assert Customer.objects.get().click_flags == []
    commission = commission_of(sale(api_client, program, click_id=click_id))
    assert (commission.flags, commission.held_at) == ([], None)
    assert_ledger_consistent(partner)


def test_turned_off_after_the_click_the_sale_is_not_held(api_client, forbids_ads, link):
    click_id = click_id_of(click(api_client, link, query="&gclid=abc"))
    rule_update(program_id=forbids_ads.pk, rule=Rule.PAID_ADS, enabled=False)
    commission = commission_of(sale(api_client, forbids_ads, click_id=click_id))
    assert (commission.flags, commission.held_at) == ([], None)


def test_flag_only_flags_the_commission_without_holding_it(api_client, forbids_ads, link, partner):
    rule_update(program_id=forbids_ads.pk, rule=Rule.PAID_ADS, action=Action.FLAG)
    click_id = click_id_of(click(api_client, link, query="&gclid=abc"))
    commission = commission_of(sale(api_client, forbids_ads, click_id=click_id))
    assert (commission.flags, commission.held_at, commission.hold_rule) == ([PAID], None, "")
    assert_ledger_consistent(partner)


def test_every_rule_that_fires_is_listed_and_the_first_holding_one_holds(api_client, forbids_ads, link, partner):
    commission = commission_of(referred_sale(api_client, link, email="pat@partnerco.com", query="&gclid=abc"))
    assert commission.flags == [Rule.SELF_REFERRAL, PAID]
    assert commission.hold_rule == Rule.SELF_REFERRAL
    assert len(reviews_of(commission)) == 1
    assert_ledger_consistent(partner)
