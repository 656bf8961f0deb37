"""bot over HTTP: a crawler's user agent, a HEAD request or a prefetch is recorded and answered like a click,
but never counted and never attributed: a lead or sale naming its click id finds no customer."""

from datetime import timedelta

import pytest

from core import messages
from fraud.config import rule_update
from fraud.rules import Rule, Traffic
from tests.factories import CustomerFactory
from tests.helpers import bad_request, bearer
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


def server_click(api_client, link, *, client_agent: str, **body):
    """A click sent by the integrator's server with no user_agent in the body: the spec's fallback reads the
    request's User-Agent header, which names the server's HTTP client."""
    payload = {"affiliate_url": f"https://shop.example.com/pricing?aff={link.short_link}", **body}
    return api_client.post(
        "/api/v1/track/click",
        payload,
        format="json",
        HTTP_USER_AGENT=client_agent,
        **bearer(link.program.raw_api_key),
    )


# HTTP clients that ua-parser takes for spiders.
SERVER_CLIENTS = ["Python-urllib/3.11", "Java/17", "Java/17.0.2", "Python-urllib/3.12"]


@pytest.mark.parametrize("client_agent", SERVER_CLIENTS)
def test_a_server_side_click_is_not_judged_by_its_http_clients_name(api_client, link, partner, client_agent):
    click_id = click_id_of(server_click(api_client, link, client_agent=client_agent, visitor_ip="203.0.113.7"))
    event = ClickEvent.objects.get()
    assert (event.traffic, event.user_agent, event.device_type) == (Traffic.HUMAN, client_agent, "other")
    assert event.customer is not None and event.customer.click_id == click_id
    assert link_clicks(link) == 1

    response = sale(api_client, link.program, click_id=click_id)
    assert response.status_code == 200, response.content
    assert response.json()["commission_id"]
    assert SaleEvent.objects.get().customer_id == event.customer_id
    assert_ledger_consistent(partner)


@pytest.mark.parametrize("client_agent", ["Python-urllib/3.11", "Java/17"])
def test_a_crawlers_user_agent_in_the_body_is_still_a_bot_whatever_the_header(api_client, link, client_agent):
    response = server_click(api_client, link, client_agent=client_agent, user_agent=GOOGLEBOT_UA)
    click_id = click_id_of(response)
    assert (ClickEvent.objects.get().traffic, ClickEvent.objects.get().device_type) == (Traffic.BOT, "bot")
    assert sale(api_client, link.program, click_id=click_id).status_code == 400


def test_a_server_relaying_its_http_clients_name_in_the_body_is_judged_by_it(api_client, link):
    """The body's user_agent is the visitor's as the integrator says: a script's name there is a script's visit."""
    click_id_of(server_click(api_client, link, client_agent="Java/17", user_agent="Python-urllib/3.11"))
    assert ClickEvent.objects.get().traffic == Traffic.BOT


def test_a_crawler_running_the_tracker_is_a_bot_by_its_header(api_client, link):
    """The tracker script sends no user_agent: in a crawler that runs the page, the header is the crawler's."""
    click_id_of(server_click(api_client, link, client_agent=GOOGLEBOT_UA))
    assert ClickEvent.objects.get().traffic == Traffic.BOT
