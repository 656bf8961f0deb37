"""svc.getDiscount() in real headless Chromium, on a page of another origin: the discount of the visitor's partner's
group once they arrived through the partner's link, null without a click or for a group with no discount, and no
discount call unless the page asks (page loads and clicks never make it)."""

from decimal import Decimal

import pytest

from groups.models import PartnerGroup
from tests.browser.test_tracker_browser import page_html
from tests.factories import PartnerProgramFactory, ProgramFactory, ReferralLinkFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DISCOUNT_CALL = "/api/v1/track/discount"


@pytest.fixture
def program():
    return ProgramFactory(cookie_duration=30)


@pytest.fixture
def vip(program):
    return PartnerGroup.objects.create(
        program=program,
        name="VIP",
        slug="vip",
        discount_type="percent",
        discount_percent=Decimal("10"),
        discount_duration="once",
    )


@pytest.fixture
def site(live_server, page_server, program):
    def make(name: str) -> str:
        return page_server.page(
            name, page_html(tracker_url=f"{live_server.url}/js/svc-tracker.js", program_id=program.pk)
        )

    return make


def discount_calls(tab) -> list[str]:
    return [request for request in tab.requests if DISCOUNT_CALL in request]


def test_a_visitor_through_a_vip_partners_link_gets_the_groups_discount(tab, site, program, vip):
    enrolment = PartnerProgramFactory(program=program, group=vip)
    ReferralLinkFactory(program=program, partner=enrolment.partner, short_link="janevip")
    tab.page.goto(site("vip.html") + "?aff=janevip")
    click_id = tab.page.evaluate("window.svc.ready")
    assert click_id
    assert discount_calls(tab) == []  # the click and the page load ask nothing of discounts
    discount = tab.page.evaluate("window.svc.getDiscount()")
    assert discount == {
        "type": "percent",
        "percent": "10.00",
        "amount_cents": None,
        "currency": "USD",
        "duration": "once",
        "duration_months": None,
        "group": "VIP",
    }
    assert len(discount_calls(tab)) == 1
    # The next page of the site: the cookie still names the click.
    tab.page.goto(site("checkout.html"))
    assert tab.page.evaluate("window.svc.getDiscount()")["group"] == "VIP"
    assert tab.blocked == []


def test_a_default_group_partner_and_a_visitor_without_a_click_get_null(tab, site, program, vip):
    enrolment = PartnerProgramFactory(program=program)
    ReferralLinkFactory(program=program, partner=enrolment.partner, short_link="plain")
    tab.page.goto(site("none.html"))
    assert tab.page.evaluate("window.svc.getDiscount()") is None
    assert discount_calls(tab) == []  # no click id: no call
    tab.page.goto(site("plain.html") + "?aff=plain")
    tab.page.evaluate("window.svc.ready")
    assert tab.page.evaluate("window.svc.getDiscount()") is None
    assert len(discount_calls(tab)) == 1
