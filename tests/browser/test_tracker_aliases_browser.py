"""svc-tracker.js with a program's link aliases (programs.link_aliases), in real headless Chromium: a link shared
on an old platform (?fpr=code) records a click for its partner once the program accepts that parameter; aff still
wins; with the aliases off the parameter sends no click."""

import time

import pytest

from tests.browser.test_tracker_browser import DAY, click_cookie, page_html, wait_for
from tests.factories import ProgramFactory, ReferralLinkFactory
from tracking.models import ClickEvent, Customer, PageVisit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def program():
    return ProgramFactory(cookie_duration=45, link_aliases=["fpr"])


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="oldfpr")


@pytest.fixture
def site(live_server, page_server, program):
    def make(name: str) -> str:
        return page_server.page(
            name, page_html(tracker_url=f"{live_server.url}/js/svc-tracker.js", program_id=program.pk)
        )

    return make


def test_an_old_platforms_link_records_a_click_for_its_partner(tab, site, link, program):
    tab.page.goto(site("fpr.html") + "?fpr=oldfpr&utm_source=blog")
    click_id = tab.page.evaluate("window.svc.ready")

    event = ClickEvent.objects.get()
    assert click_id == event.click_id
    assert (event.link, event.partner_id, event.program) == (link, link.partner_id, program)
    assert Customer.objects.get(click_id=click_id).first_partner_id == link.partner_id
    cookie = click_cookie(tab)
    assert cookie is not None and cookie["value"] == click_id
    assert abs(cookie["expires"] - (time.time() + 45 * DAY)) < 60
    wait_for(tab, lambda: PageVisit.objects.exists())
    assert PageVisit.objects.get().click_id == click_id
    assert tab.blocked == []


def test_aff_wins_over_the_alias(tab, site, link, program):
    winner = ReferralLinkFactory(program=program, short_link="newaff")
    tab.page.goto(site("both.html") + "?fpr=oldfpr&aff=newaff")
    click_id = tab.page.evaluate("window.svc.ready")
    assert ClickEvent.objects.get().link == winner
    assert click_cookie(tab)["value"] == click_id


def test_with_the_aliases_off_the_parameter_sends_no_click(tab, site, link, program):
    program.link_aliases = []
    program.save(update_fields=["link_aliases"])
    tab.page.goto(site("off.html") + "?fpr=oldfpr")
    assert tab.page.evaluate("window.svc.ready") is None

    wait_for(tab, lambda: PageVisit.objects.exists())
    assert PageVisit.objects.get().click_id == ""
    assert not ClickEvent.objects.exists() and click_cookie(tab) is None
    assert not any("/api/v1/track/click" in request for request in tab.requests)
