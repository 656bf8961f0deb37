"""svc-tracker.js in real headless Chromium, on a page of another origin, against the live service: the click
cookie, window.svc, signups, page visits, the config call and Stripe payment links."""

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.factories import ProgramFactory, ReferralLinkFactory
from tracking.models import ClickEvent, Customer, LeadEvent, PageVisit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DAY = 86400


def page_html(*, tracker_url: str, program_id: int, body: str = "", extra: str = "") -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Acme pricing</title>
  <script async src="{tracker_url}" data-svc-program-id="{program_id}" {extra}></script>
  <style>
    body {{ font-family: sans-serif; margin: 40px; }}
    a, stripe-buy-button {{ display: block; margin: 12px 0; }}
  </style>
</head>
<body>
  <h1>Acme pricing</h1>
  {body}
</body>
</html>"""


def wait_for(tab, check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Waits for something the page sends without awaiting it (the visit follows window.svc.ready). It waits
    through Playwright, not time.sleep: the route filter answers the page's requests only while Playwright runs."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        tab.page.wait_for_timeout(50)


@pytest.fixture
def program():
    # A connected Stripe account: the tracker decorates payment links.
    return ProgramFactory(cookie_duration=45, stripe_account_id="acct_browser")


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="summer")


@pytest.fixture
def site(live_server, page_server, program):
    def make(name: str, *, body: str = "", extra: str = "", program_id: int | None = None) -> str:
        return page_server.page(
            name,
            page_html(
                tracker_url=f"{live_server.url}/js/svc-tracker.js",
                program_id=program.pk if program_id is None else program_id,
                body=body,
                extra=extra,
            ),
        )

    return make


def click_cookie(tab) -> dict[str, Any] | None:
    return next((cookie for cookie in tab.context.cookies() if cookie["name"] == "svc_click_id"), None)


def test_it_records_the_click_and_keeps_the_click_id_in_a_first_party_cookie(tab, site, link, program):
    url = site("landing.html") + "?aff=summer"
    tab.page.goto(url, referer="https://blog.example.org/review")
    click_id = tab.page.evaluate("window.svc.ready")

    event = ClickEvent.objects.get()
    assert click_id == event.click_id == Customer.objects.get().click_id
    assert event.link == link
    assert (event.page_url, event.page_title) == (url, "Acme pricing")
    assert event.referrer_url == "https://blog.example.org/review"
    assert event.session_id and event.language and event.timezone
    assert event.screen_resolution and event.viewport_size == "1280x720"
    assert tab.page.evaluate("window.svc.getClickId()") == click_id

    cookie = click_cookie(tab)
    assert cookie is not None
    assert (cookie["value"], cookie["domain"], cookie["path"]) == (click_id, "localhost", "/")
    assert (cookie["sameSite"], cookie["secure"], cookie["httpOnly"]) == ("Lax", False, False)
    assert abs(cookie["expires"] - (time.time() + 45 * DAY)) < 60  # the program's cookie window
    assert [c["domain"] for c in tab.context.cookies()] == ["localhost"]  # nothing on the tracker's host

    # The page visit follows the click and carries its id.
    wait_for(tab, lambda: PageVisit.objects.exists())
    visit = PageVisit.objects.get()
    assert (visit.program, visit.click_id, visit.session_id) == (program, click_id, event.session_id)
    assert visit.referrer_domain == "blog.example.org"
    assert tab.blocked == []


def test_signup_records_a_browser_lead_for_the_click(tab, site, link):
    tab.page.goto(site("signup.html") + "?aff=summer")
    click_id = tab.page.evaluate("window.svc.ready")

    answer = tab.page.evaluate("window.svc.signup('user_42', 'ada@example.com')")

    lead = LeadEvent.objects.get()
    assert answer == {"success": True, "lead_id": lead.pk, "click_id": click_id}
    assert (lead.click_id, lead.customer_key, lead.email) == (click_id, "user_42", "ada@example.com")
    assert lead.server_mode is False and lead.provisional is False
    customer = Customer.objects.get()
    assert (customer.customer_status, customer.customer_key) == ("lead", "user_42")


def test_it_writes_the_click_id_onto_stripe_payment_links_buttons_and_tables(tab, site, link):
    body = """
      <a id="plain" href="https://buy.stripe.com/test_123">Buy Pro</a>
      <a id="stale" href="https://buy.stripe.com/test_456?prefilled_email=a%40b.example&client_reference_id=old">
        Buy Team</a>
      <a id="other" href="https://example.com/checkout">Not Stripe</a>
      <stripe-buy-button id="button" buy-button-id="buy_btn_1" publishable-key="pk_test_1"></stripe-buy-button>
      <stripe-pricing-table id="table" pricing-table-id="prctbl_1" publishable-key="pk_test_1"></stripe-pricing-table>
    """
    tab.page.goto(site("stripe.html", body=body) + "?aff=summer")
    click_id = tab.page.evaluate("window.svc.ready")
    page = tab.page

    assert page.get_attribute("#plain", "href") == f"https://buy.stripe.com/test_123?client_reference_id={click_id}"
    assert page.get_attribute("#stale", "href") == (
        f"https://buy.stripe.com/test_456?prefilled_email=a%40b.example&client_reference_id={click_id}"
    )
    assert page.get_attribute("#other", "href") == "https://example.com/checkout"
    assert page.get_attribute("#button", "client-reference-id") == click_id
    assert page.get_attribute("#table", "client-reference-id") == click_id

    # Links and buttons added after load are decorated as they appear.
    page.evaluate(
        """() => {
          const link = document.createElement('a');
          link.id = 'late';
          link.href = 'https://buy.stripe.com/test_789';
          link.textContent = 'Buy Enterprise';
          document.body.appendChild(link);
          const wrapper = document.createElement('div');
          wrapper.innerHTML = '<stripe-buy-button id="late-button"></stripe-buy-button>';
          document.body.appendChild(wrapper);
        }"""
    )
    page.wait_for_function(
        "id => document.getElementById('late').href.endsWith('client_reference_id=' + id)", arg=click_id
    )
    page.wait_for_function(
        "id => document.getElementById('late-button').getAttribute('client-reference-id') === id", arg=click_id
    )
    # The artifact shows what the tracker wrote: each element with its decorated target.
    page.evaluate(
        """id => document.body.insertAdjacentHTML('beforeend', '<h2>svc_click_id: ' + id + '</h2><pre>' +
          [...document.querySelectorAll('a, stripe-buy-button, stripe-pricing-table')].map(element =>
            element.id + ': ' + (element.getAttribute('href') || 'client-reference-id=' +
            element.getAttribute('client-reference-id'))).join('\\n') + '</pre>')""",
        click_id,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "svc-tracker-page.png"), full_page=True)
    assert tab.blocked == []


def test_it_accepts_the_via_alias(tab, site, link):
    tab.page.goto(site("via.html") + "?via=summer")
    click_id = tab.page.evaluate("window.svc.ready")
    assert click_id and ClickEvent.objects.get().click_id == click_id
    assert click_cookie(tab)["value"] == click_id


def test_a_page_without_aff_records_a_visit_and_no_click(tab, site, link):
    body = '<a id="plain" href="https://buy.stripe.com/test_123">Buy Pro</a>'
    tab.page.goto(site("organic.html", body=body) + "?utm_source=newsletter&utm_campaign=spring")
    assert tab.page.evaluate("window.svc.ready") is None

    wait_for(tab, lambda: PageVisit.objects.exists())
    visit = PageVisit.objects.get()
    assert (visit.click_id, visit.utm_source, visit.utm_campaign) == ("", "newsletter", "spring")
    assert not ClickEvent.objects.exists() and not Customer.objects.exists()
    assert click_cookie(tab) is None
    assert tab.page.get_attribute("#plain", "href") == "https://buy.stripe.com/test_123"
    # signup has nothing to attribute and calls nothing.
    answer = tab.page.evaluate("window.svc.signup('user_1', 'bo@example.com')")
    assert answer["success"] is False and answer["skipped"] is True
    assert not LeadEvent.objects.exists()
    assert not any("/api/v1/track/click" in r or "/api/v1/track/lead" in r for r in tab.requests)


def test_a_returning_visitor_keeps_the_click_and_config_is_asked_once_per_tab(tab, site, link):
    body = '<a id="plain" href="https://buy.stripe.com/test_123">Buy Pro</a>'
    tab.page.goto(site("first.html") + "?aff=summer")
    click_id = tab.page.evaluate("window.svc.ready")
    tab.page.goto(site("second.html", body=body))
    assert tab.page.evaluate("window.svc.ready") == click_id

    # The next page of the same tab: its visit carries the cookie's click id, its links are decorated.
    assert tab.page.get_attribute("#plain", "href").endswith(f"client_reference_id={click_id}")
    wait_for(tab, lambda: PageVisit.objects.count() == 2)
    visits = list(PageVisit.objects.order_by("pk"))
    assert [visit.click_id for visit in visits] == [click_id, click_id]
    assert visits[0].session_id == visits[1].session_id != ""
    assert ClickEvent.objects.count() == 1
    config_calls = [r for r in tab.requests if r.startswith("GET ") and "/api/v1/track/config" in r]
    assert len(config_calls) == 1


def test_it_leaves_payment_links_alone_when_the_program_has_no_stripe_account(tab, site, program, link):
    program.stripe_account_id = ""
    program.save(update_fields=["stripe_account_id"])
    body = '<a id="plain" href="https://buy.stripe.com/test_123">Buy Pro</a>'
    tab.page.goto(site("no-stripe.html", body=body) + "?aff=summer")
    assert tab.page.evaluate("window.svc.ready")
    assert tab.page.get_attribute("#plain", "href") == "https://buy.stripe.com/test_123"


def test_test_mode_flags_the_click_and_the_visit(tab, site, link):
    tab.page.goto(site("test-mode.html", extra='data-svc-test-mode="true"') + "?aff=summer")
    click_id = tab.page.evaluate("window.svc.ready")
    event = ClickEvent.objects.get()
    assert event.is_test is True and event.click_id == click_id
    wait_for(tab, lambda: PageVisit.objects.exists())
    assert PageVisit.objects.get().is_test is True


def test_the_page_cannot_reach_any_other_host(tab, site, program):
    body = '<img id="pixel" src="https://example.com/pixel.png" alt="">'
    tab.page.goto(site("third-party.html", body=body))
    tab.page.evaluate("window.svc.ready")
    assert tab.blocked == ["https://example.com/pixel.png"]


# Chromium prerenders a page (Speculation Rules) with document.prerendering true until the visitor is shown it,
# then fires prerenderingchange. The page here simulates that before the tracker runs: the property reads a flag
# the test clears when it "activates" the page.
PRERENDERING = """
window.__svcPrerendering = true;
Object.defineProperty(document, "prerendering", {
  configurable: true,
  get: function () { return window.__svcPrerendering; },
});
"""
ACTIVATE = "window.__svcPrerendering = false; document.dispatchEvent(new Event('prerenderingchange'));"


def test_a_normal_page_load_records_one_counted_click(tab, site, link):
    tab.page.goto(site("counted.html") + "?aff=summer")
    click_id = tab.page.evaluate("window.svc.ready")

    event = ClickEvent.objects.get()
    assert event.click_id == click_id
    assert (event.traffic, event.flags) == ("", [])  # a person's click: counted, not flagged
    assert event.customer == Customer.objects.get(click_id=click_id)
    assert tab.page.evaluate("document.prerendering") is False
    # The visit the tracker sends after the click is stored before the test's tables are emptied.
    wait_for(tab, lambda: PageVisit.objects.exists())


def test_a_prerendered_page_sends_nothing_until_it_is_shown(tab, site, link):
    tab.page.add_init_script(PRERENDERING)
    tab.page.goto(site("prerendered.html") + "?aff=summer")
    assert tab.page.evaluate("document.prerendering") is True
    # The tracker ran (window.svc is there) but called nothing while the page was not shown.
    wait_for(tab, lambda: tab.page.evaluate("!!(window.svc && window.svc.ready)"))
    tab.page.wait_for_timeout(500)
    assert [r for r in tab.requests if "/api/v1/" in r] == []
    assert not ClickEvent.objects.exists() and not PageVisit.objects.exists()
    assert click_cookie(tab) is None

    tab.page.evaluate(ACTIVATE)
    click_id = tab.page.evaluate("window.svc.ready")

    event = ClickEvent.objects.get()
    assert (event.click_id, event.traffic) == (click_id, "")
    assert click_cookie(tab)["value"] == click_id
    wait_for(tab, lambda: PageVisit.objects.exists())
    assert PageVisit.objects.get().click_id == click_id
