"""Accessibility of the dashboard in real headless Chromium: axe-core (WCAG 2.1 A and AA rules) over every page,
signed out and signed in, at desktop and phone sizes, where any violation fails and is listed; then what axe cannot
see: the skip link moves focus to the content, a tab's focus ring is not cut off by the scrolling tab bar, the
chart's colours stand out from the white chart and its table alternative describes it, and a refused form puts
focus on its first invalid field, tied to its message.

axe-core is test data (tests/browser/vendor/axe-core, from the npm registry; its README says which version and
how to update it): it is injected into each page from that file, nothing is downloaded."""

import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from fraud.rules import Rule
from programs.models import ApiCall, Role
from tests.dashboard.pages.review_rows import click, held_by_rule
from tests.dashboard.pages.webhook_rows import delivery_make
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
    WebhookEndpointFactory,
)
from webhooks import messages as webhook_messages
from webhooks.models import WebhookEndpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
AXE_VERSION = "4.14.1"
WCAG_21_A_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PASSWORD = "pass-word-123"  # UserFactory's
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
# Pages that fill themselves from the dashboard API: checked once their data is in.
PUBLIC_HOOK = "https://93.184.215.14/hook"  # a public address, not resolved: the URL check takes it at once
LOADS = {"overview": "#overview", "events": "#events", "readiness": "#readiness"}


@dataclass
class Demo:
    """A program with something on every page: clicks (one flagged), a sale with its commission, a commission a
    rule held, a webhook endpoint with a failed delivery, and request log rows."""

    program: Any
    owner: Any
    endpoint: WebhookEndpoint
    transaction_id: str


@pytest.fixture
def demo() -> Demo:
    program = ProgramFactory.create(name="Acme Pro", domain="acme.example.com")
    owner = MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user
    link = ReferralLinkFactory.create(program=program, short_link="summer")
    now = timezone.now()
    customer = CustomerFactory.create(link=link, click_id="cust_a11y_1")
    click(link, click_id=customer.click_id, customer=customer, click_timestamp=now - timedelta(hours=2))
    click(link, flags=["paid_ads"], click_timestamp=now - timedelta(hours=1))
    sale = SaleFactory.create(customer=customer, amount_cents=4900, sale_date=now - timedelta(minutes=40))
    CommissionFactory.create(sale=sale, amount_cents=980)
    held_by_rule(link)
    endpoint = WebhookEndpointFactory.create(program=program)
    delivery_make(endpoint)
    ApiCall.objects.create(program=program, created_at=now, method="POST", route="track-click", status=200)
    ApiCall.objects.create(program=program, created_at=now, method="POST", route="track-sale", status=400)
    assert sale.processor_event_id
    return Demo(program=program, owner=owner, endpoint=endpoint, transaction_id=sale.processor_event_id)


@pytest.fixture
def axe_tab(tab):
    # Into every document the tab loads, before the page's own scripts; it only defines window.axe.
    tab.context.add_init_script(path=str(AXE))
    tab.page.emulate_media(reduced_motion="reduce")  # no transition caught halfway by the contrast rule
    return tab


def axe_violations(page) -> list[str]:
    """Every WCAG 2.1 A/AA violation axe finds on the page as it is, one line per element."""
    assert page.evaluate("window.axe && axe.version") == AXE_VERSION
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        WCAG_21_A_AA,
    )
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']} at {' '.join(node['target'])}: "
        + " ".join(node["failureSummary"].split())
        for violation in result["violations"]
        for node in violation["nodes"]
    ]


def expect(locator):
    # Imported when used, as conftest does: without the playwright package the browser tests skip (or fail in CI).
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def sign_in(page, user, password: str = PASSWORD) -> None:
    """Through the sign-in form the page is on; back where it was sent from (or the form again, refused)."""
    page.fill("#id_username", user.username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("button[type=submit]")


def program_pages(base: str, demo: Demo) -> dict[str, str]:
    program = f"{base}/programs/{demo.program.pk}"
    webhook = f"{program}/webhooks/{demo.endpoint.pk}"
    return {
        "programs": f"{base}/",
        "overview": f"{program}/",
        "events": f"{program}/events",
        "readiness": f"{program}/readiness",
        "partners": f"{program}/partners",
        "commissions": f"{program}/commissions",
        "review": f"{program}/review",
        "fraud rules": f"{program}/review/rules",
        "logs": f"{program}/logs",
        "explain": f"{program}/explain?transaction_id={demo.transaction_id}",
        "webhooks": f"{program}/webhooks",
        "webhook": webhook,
        "new webhook": f"{program}/webhooks/new",
        "edit webhook": f"{webhook}/edit",
        "delete webhook": f"{webhook}/delete",
        "API key": f"{program}/key",
        "Stripe": f"{program}/stripe",
        "payouts": f"{program}/payouts",
        "import": f"{program}/import",
        "error codes": f"{base}/docs/errors",
        "CLI sign-in (link no longer valid)": f"{base}/cli/login",
    }


def test_axe_finds_no_violation_on_any_page(axe_tab, live_server, demo):
    page = axe_tab.page
    base = live_server.url
    found: dict[str, list[str]] = {}

    def check(name: str) -> None:
        size = "phone" if page.viewport_size == PHONE else "desktop"
        if violations := axe_violations(page):
            found[f"{name} ({size})"] = violations

    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        page.goto(f"{base}/accounts/login/")
        check("sign-in")
        sign_in(page, demo.owner, password="not-the-password")
        assert page.locator(".signin [role=alert]").count() == 1
        check("sign-in, refused")
        sign_in(page, demo.owner)
        for name, url in program_pages(base, demo).items():
            response = page.goto(url)
            assert response is not None and response.status < 500, f"{name}: {url} answered {response}"
            if name in LOADS:
                page.wait_for_selector(f'{LOADS[name]}[data-state="ready"]')
            check(name)
        page.context.clear_cookies()  # signed out again for the next size

    listing = "\n".join(f"{where}:\n  " + "\n  ".join(lines) for where, lines in found.items())
    assert not found, f"axe-core {AXE_VERSION} found WCAG 2.1 A/AA violations:\n{listing}"


def test_the_skip_link_moves_focus_to_the_content(tab, live_server, demo):
    page = tab.page
    page.goto(f"{live_server.url}/programs/{demo.program.pk}/commissions")
    sign_in(page, demo.owner)
    page.wait_for_url("**/commissions")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.locator("a.skip").bounding_box()["x"] >= 0  # on screen while focused
    page.keyboard.press("Enter")
    page.wait_for_function("document.activeElement.id === 'main'")
    # The next Tab starts in the content (the program's breadcrumb), past the top bar's links.
    page.keyboard.press("Tab")
    assert page.evaluate("Boolean(document.activeElement.closest('main'))")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Programs"


def test_a_focused_tab_shows_its_whole_focus_ring(tab, live_server, demo):
    page = tab.page
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/programs/{demo.program.pk}/")
    sign_in(page, demo.owner)
    page.wait_for_selector("nav.tabs")
    for _ in range(40):  # by keyboard, so the ring is the one keyboard users see (:focus-visible)
        page.keyboard.press("Tab")
        if page.evaluate("Boolean(document.activeElement.closest('nav.tabs'))"):
            break
    else:
        pytest.fail("Tab never reached the program's tabs")
    for _ in range(3):  # the first tab (Overview, the current one) and the two after it
        ring = page.evaluate(
            """() => {
              const link = document.activeElement, nav = link.closest('nav.tabs');
              const style = getComputedStyle(link);
              const reach = parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset);
              const box = link.getBoundingClientRect(), bar = nav.getBoundingClientRect();
              return {
                visible: link.matches(':focus-visible') && style.outlineStyle !== 'none',
                width: parseFloat(style.outlineWidth),
                ring: [box.top - reach, box.bottom + reach, box.left - reach, box.right + reach],
                // The tab bar scrolls, so it clips at its padding box.
                clip: [bar.top + nav.clientTop, bar.top + nav.clientTop + nav.clientHeight,
                       bar.left + nav.clientLeft, bar.left + nav.clientLeft + nav.clientWidth],
                text: link.textContent,
              };
            }"""
        )
        assert ring["visible"] and ring["width"] >= 2, ring
        top, bottom, left, right = ring["ring"]
        clip_top, clip_bottom, clip_left, clip_right = ring["clip"]
        # Half a pixel for rounding; the ring this replaced reached 3 px past the bar.
        assert clip_top - 0.5 <= top and bottom <= clip_bottom + 0.5, f"the ring of {ring['text']!r} is cut: {ring}"
        assert clip_left - 0.5 <= left and right <= clip_right + 0.5, f"the ring of {ring['text']!r} is cut: {ring}"
        page.keyboard.press("Tab")


def luminance(colour: str) -> float:
    """Relative luminance (WCAG) of #rrggbb or rgb(a)(), an alpha laid over the white chart."""
    if colour.startswith("#"):
        channels, alpha = [float(int(colour[i : i + 2], 16)) for i in (1, 3, 5)], 1.0
    else:
        numbers = [float(part) for part in re.findall(r"[\d.]+", colour)]
        channels, alpha = numbers[:3], numbers[3] if len(numbers) > 3 else 1.0
    linear = []
    for channel in channels:
        value = (255 + (channel - 255) * alpha) / 255
        linear.append(value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4)
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_with_white(colour: str) -> float:
    return 1.05 / (luminance(colour) + 0.05)


def test_the_chart_stands_out_and_is_described_by_its_table(tab, live_server, demo):
    page = tab.page
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"{live_server.url}/programs/{demo.program.pk}/")
    sign_in(page, demo.owner)
    page.wait_for_selector('#overview[data-state="ready"]')
    colours = page.evaluate(
        """() => Chart.getChart(document.getElementById('funnel-chart')).data.datasets
                 .map(set => [set.label, set.backgroundColor])"""
    )
    assert [label for label, _ in colours] == ["Clicks", "Leads", "Sales", "Revenue"]
    for label, colour in colours:  # WCAG 1.4.11: graphics at least 3:1 against what is next to them
        assert contrast_with_white(colour) >= 3, f"{label} ({colour}): {contrast_with_white(colour):.2f}:1"
    assert contrast_with_white("rgba(158, 119, 237, 0.35)") < 1.5  # the old revenue tint, as the check sees it

    chart = page.get_by_role("img", name="Clicks, leads, sales and revenue per day")
    date_from, date_to = page.input_value("#range-from"), page.input_value("#range-to")
    caption = f"Clicks, leads, sales, revenue and commission per day, {date_from} to {date_to} (UTC): the chart's data"
    assert page.text_content("#funnel-data caption") == caption  # inside the closed <details>: hidden, still read
    assert chart.get_attribute("aria-details") == "funnel-data"
    expect(chart).to_have_accessible_description(caption)
    page.click(".chart-table summary")
    table = page.get_by_role("table", name=caption)
    assert table.locator("tbody tr").count() >= 1


def test_a_refused_rule_puts_focus_on_its_field_tied_to_the_message(axe_tab, live_server, demo):
    page = axe_tab.page
    page.goto(f"{live_server.url}/programs/{demo.program.pk}/review/rules")
    sign_in(page, demo.owner)
    page.wait_for_url("**/review/rules")
    threshold = page.get_by_label(f"{Rule.SALE_VELOCITY.label}: threshold", exact=True)
    assert threshold.count() == 1  # every control is named by its rule and its column
    assert page.get_by_label(f"{Rule.BOT.label}: when it fires", exact=True).count() == 1
    assert page.get_by_label(f"{Rule.DUPLICATE_CLICK.label}: window (minutes)", exact=True).count() == 1
    threshold.fill("")
    page.click("#save-rules")
    page.wait_for_function("document.activeElement.name === 'sale_velocity-threshold'")
    assert page.evaluate("document.activeElement.getAttribute('aria-invalid')") == "true"
    expect(page.locator("#id_sale_velocity-threshold")).to_have_accessible_description("Threshold: Enter a threshold.")
    assert page.locator("[aria-invalid=true]").count() == 1
    assert axe_violations(page) == []


def test_a_refused_webhook_form_puts_focus_on_its_field_tied_to_the_message(axe_tab, live_server, demo):
    page = axe_tab.page
    page.goto(f"{live_server.url}/programs/{demo.program.pk}/webhooks/new")
    sign_in(page, demo.owner)
    page.wait_for_url("**/webhooks/new")

    # The service refuses the URL (loopback): the refusal lands on the URL field, which gets focus.
    page.fill("#id_url", "http://127.0.0.1/hook")
    page.click("#save-endpoint")
    page.wait_for_function("document.activeElement.id === 'id_url'")
    message = webhook_messages.URL_PRIVATE.format(address="127.0.0.1")
    url = page.locator("#id_url")
    assert url.get_attribute("aria-invalid") == "true"
    expect(url).to_have_accessible_description(message)
    assert page.inner_text("#form-errors").strip() == f"URL: {message}"
    assert axe_violations(page) == []

    # Its refusal of no event type lands on the boxes: the first one gets focus and reads the message.
    page.fill("#id_url", PUBLIC_HOOK)
    page.click("#save-endpoint")
    page.wait_for_function("document.activeElement.name === 'event_types'")
    assert page.get_attribute("#id_url", "aria-invalid") is None
    first_box = page.locator("#id_event_types_0")
    assert first_box.get_attribute("aria-invalid") == "true"
    expect(first_box).to_have_accessible_description(webhook_messages.EVENT_TYPES_REQUIRED)
    # The summary's link goes to that first box.
    page.click("#form-errors a")
    assert page.evaluate("document.activeElement.id") == "id_event_types_0"
    assert axe_violations(page) == []
    assert not WebhookEndpoint.objects.filter(url=PUBLIC_HOOK).exists()
