"""bot over HTTP: a crawler's user agent, a HEAD request or a prefetch is recorded and answered like a click,
but never counted and never attributed: a lead or sale naming its click id finds no customer."""

from datetime import timedelta

import pytest

from core import messages
from fraud.config import rule_update
from fraud.rules import Rule, Traffic
from tests.factories import CustomerFactory
from tests.helpers import bad_request
from tracking.models import ClickEvent, Customer, LeadEvent, SaleEvent, TrackingLog
from tracking.rollups import rollups_update

from .flow import (
    CHROME_UA,
    GOOGLEBOT_UA,
    assert_ledger_consistent,
    click,
    click_id_of,
    dashboard_clicks,
    lead,
    link_clicks,
    partner_clicks,
    sale,
)

pytestmark = pytest.mark.django_db

SLACKBOT_UA = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
FACEBOOK_UA = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"


def assert_not_counted(link) -> None:
    assert (link_clicks(link), partner_clicks(link), dashboard_clicks(link.program)) == (0, 0, 0)
    rollups_update(settle=timedelta(0))
    assert (link_clicks(link), partner_clicks(link), dashboard_clicks(link.program)) == (0, 0, 0)


@pytest.mark.parametrize("user_agent", [GOOGLEBOT_UA, SLACKBOT_UA, FACEBOOK_UA])
def test_a_crawlers_click_is_recorded_as_a_bot_without_a_customer(api_client, link, user_agent):
    response = click(api_client, link, user_agent=user_agent)
    click_id = click_id_of(response)
    event = ClickEvent.objects.get()
    assert (event.traffic, event.customer, event.click_id) == (Traffic.BOT, None, click_id)
    assert event.visitor_hash
    assert not Customer.objects.exists()
    assert_not_counted(link)


def test_a_lead_on_a_bots_click_id_finds_no_customer(api_client, link):
    click_id = click_id_of(click(api_client, link, user_agent=GOOGLEBOT_UA))
    response = lead(api_client, link.program, click_id=click_id, customer_key="user_1", email="a@shop.test")
    assert response.status_code == 400
    assert response.json() == bad_request(messages.LEAD_CUSTOMER_NOT_FOUND)
    assert not LeadEvent.objects.exists()


def test_a_sale_on_a_bots_click_id_is_not_attributed(api_client, link, partner):
    click_id = click_id_of(click(api_client, link, user_agent=GOOGLEBOT_UA))
    response = sale(api_client, link.program, click_id=click_id)
    assert response.status_code == 400
    assert response.json() == bad_request(messages.SALE_CUSTOMER_NOT_FOUND, code="no_attribution")
    assert not SaleEvent.objects.exists()
    assert_ledger_consistent(partner)
    # The refusal's support trail names the click id, which explain then tells as a bot's click.
    refused = TrackingLog.objects.get(event="sale", outcome="no_attribution")
    assert refused.details["click_id"] == click_id


def test_a_bots_click_with_existing_click_id_leaves_that_customer_untouched(api_client, link):
    customer = CustomerFactory(link=link)
    before = customer.last_clicked_at
    response = click(api_client, link, user_agent=GOOGLEBOT_UA, existing_click_id=customer.click_id)
    # The cookie's click id comes back (a prefetch must not replace it), but the customer is not touched.
    assert click_id_of(response) == customer.click_id
    customer.refresh_from_db()
    assert customer.last_clicked_at == before
    assert ClickEvent.objects.get().customer is None


def test_a_head_request_with_a_clicks_body_is_a_prefetch(api_client, link):
    response = click(api_client, link, method="HEAD")
    assert response.status_code == 200
    event = ClickEvent.objects.get()
    assert (event.traffic, event.customer) == (Traffic.PREFETCH, None)
    assert not Customer.objects.exists()
    assert_not_counted(link)


@pytest.mark.parametrize(
    "header",
    [
        {"HTTP_SEC_PURPOSE": "prefetch"},
        {"HTTP_SEC_PURPOSE": "prefetch;prerender"},
        {"HTTP_PURPOSE": "prefetch"},
        {"HTTP_X_MOZ": "prefetch"},
    ],
)
def test_a_post_marked_as_a_prefetch_is_a_prefetch(api_client, link, header):
    click_id = click_id_of(click(api_client, link, headers=header))
    event = ClickEvent.objects.get()
    assert (event.traffic, event.customer, event.click_id) == (Traffic.PREFETCH, None, click_id)
    assert sale(api_client, link.program, click_id=click_id).status_code == 400
    assert_not_counted(link)


def test_a_bot_does_not_make_a_later_human_click_a_duplicate(api_client, link):
    click(api_client, link, user_agent=GOOGLEBOT_UA)
    click(api_client, link, method="HEAD", user_agent=CHROME_UA)
    click(api_client, link, user_agent=CHROME_UA)
    traffic = list(ClickEvent.objects.order_by("pk").values_list("traffic", flat=True))
    assert traffic == [Traffic.BOT, Traffic.PREFETCH, Traffic.HUMAN]
    assert link_clicks(link) == 1


def test_with_the_rule_off_a_bot_and_a_prefetch_count_and_are_attributed(api_client, link, partner):
    rule_update(program_id=link.program_id, rule=Rule.BOT, enabled=False)
    bot = click_id_of(click(api_client, link, user_agent=GOOGLEBOT_UA))
    click(api_client, link, headers={"HTTP_SEC_PURPOSE": "prefetch"})
    assert set(ClickEvent.objects.values_list("traffic", flat=True)) == {Traffic.HUMAN}
    assert Customer.objects.count() == 2
    assert link_clicks(link) == 2
    response = sale(api_client, link.program, click_id=bot)
    assert response.status_code == 200 and response.json()["commission_id"]
    assert_ledger_consistent(partner)
