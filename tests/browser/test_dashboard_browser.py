"""The dashboard in real headless Chromium against the live service and its dashboard API: sign in through the
form, the program list, the funnel chart drawn by the vendored Chart.js, the events filter, the readiness
checklist and verification, and key regeneration (owner: confirm, new key shown once; member: no button).
Screenshots go to test-artifacts/dashboard-*.png."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from programs.keys import key_digest
from programs.models import ProgramKey, Role
from tests.factories import CommissionFactory, CustomerFactory, MembershipFactory, ProgramFactory, ReferralLinkFactory
from tracking.models import ClickEvent, LeadEvent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PASSWORD = "pass-word-123"  # UserFactory's
PHONE = {"width": 390, "height": 844}


@pytest.fixture(autouse=True)
def _patient(tab):
    # A sign-in plus several API calls per step: conftest's 5 s default is tight on a loaded machine. Passing
    # runs are as fast as before; only a real hang takes longer to report.
    tab.page.set_default_timeout(15_000)


@pytest.fixture
def program():
    """Live traffic over the last two days: 3 clicks (plus a test click, never counted), 1 lead, 1 sale of
    49.00 USD with a 9.80 commission."""
    program = ProgramFactory(name="Acme Pro", domain="acme.example.com")
    link = ReferralLinkFactory(program=program, short_link="summer")
    now = timezone.now()
    customer = CustomerFactory(link=link, click_id="cust_browser_1")
    for n, age in enumerate([timedelta(hours=1), timedelta(hours=2), timedelta(days=1)]):
        ClickEvent.objects.create(
            program=program,
            partner=link.partner,
            link=link,
            customer=customer if n == 0 else None,
            click_id=customer.click_id if n == 0 else f"cust_browser_other_{n}",
            page_url="https://acme.example.com/pricing?aff=summer",
            geo_country="DE",
            geo_city="Berlin",
            device_type="desktop",
            browser_name="Chrome",
            click_timestamp=now - age,
        )
    ClickEvent.objects.create(program=program, click_id="cust_browser_test", is_test=True, click_timestamp=now)
    LeadEvent.objects.create(
        program=program,
        customer=customer,
        partner=link.partner,
        click_id=customer.click_id,
        customer_key="user_42",
        lead_timestamp=now - timedelta(minutes=50),
    )
    CommissionFactory(
        sale__customer=customer, sale__amount_cents=4900, sale__sale_date=now - timedelta(minutes=40), amount_cents=980
    )
    return program


@pytest.fixture
def owner(program):
    return MembershipFactory(workspace=program.workspace, role=Role.OWNER).user


@pytest.fixture
def member(program):
    return MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user


def sign_in(tab, live_server, user) -> None:
    page = tab.page
    page.goto(f"{live_server.url}/")  # signed out: sent to the form
    assert page.url.startswith(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def wait_ready(page, root: str) -> None:
    page.wait_for_selector(f'{root}[data-state="ready"]')


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def drawn_pixels(page) -> int:
    return page.evaluate(
        """() => {
          const canvas = document.getElementById('funnel-chart');
          const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
          let drawn = 0;
          for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) drawn++;
          return drawn;
        }"""
    )


def test_an_owner_signs_in_sees_the_program_list_and_the_funnel_chart(tab, live_server, program, owner):
    page = tab.page
    page.emulate_media(reduced_motion="reduce")  # the chart then draws at once, without its entry animation
    sign_in(tab, live_server, owner)
    card = page.locator(".program-card", has_text="Acme Pro")
    assert card.locator(".badge").inner_text().lower() == "owner"
    screenshot(page, "dashboard-programs.png")

    card.locator("a.program-link").click()
    page.wait_for_url(f"{live_server.url}/programs/{program.pk}/")
    wait_ready(page, "#overview")
    totals = {
        key: page.inner_text(f'[data-total="{key}"]')
        for key in ("clicks", "leads", "sales", "revenue_cents", "commission_cents")
    }
    assert totals == {"clicks": "3", "leads": "1", "sales": "1", "revenue_cents": "49.00", "commission_cents": "9.80"}
    assert page.inner_text('[data-rate="leads"]') == "33.3% of clicks"
    # The latest live event of each type, from the status API (minutes, UTC).
    page.wait_for_function("document.querySelector('[data-last=\"sale\"]').textContent.length === 16")
    newest_click = ClickEvent.objects.filter(program=program, is_test=False).latest("click_timestamp")
    assert page.inner_text('[data-last="click"]') == f"{newest_click.click_timestamp:%Y-%m-%d %H:%M}"
    # Chart.js drew the chart on the canvas from the performance API's days.
    sums = page.evaluate(
        """() => Chart.getChart(document.getElementById('funnel-chart')).data.datasets
                 .map(set => [set.label, set.data.reduce((a, b) => a + b, 0)])"""
    )
    assert sums == [["Clicks", 3], ["Leads", 1], ["Sales", 1], ["Revenue", 49]]
    assert drawn_pixels(page) > 5_000  # axes, lines, bars and legend (no animation with reduced motion)
    screenshot(page, "dashboard-overview.png")

    # A quick range re-reads the API and keeps the range in the address.
    with page.expect_response(lambda response: "/api/tracking/performance/" in response.url) as answer:
        page.click('button[data-days="7"]')
    assert answer.value.status == 200
    wait_ready(page, "#overview")
    assert "from=" in page.url and "to=" in page.url
    assert page.get_attribute('button[data-days="7"]', "aria-pressed") == "true"

    page.set_viewport_size(PHONE)
    page.wait_for_function("document.getElementById('funnel-chart').clientWidth < 390")  # the chart resized
    screenshot(page, "dashboard-overview-phone.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # nothing sticks out
    assert tab.blocked == []  # nothing came from another host (no CDN)


def test_events_can_be_filtered_by_type(tab, live_server, program, owner):
    page = tab.page
    sign_in(tab, live_server, owner)
    page.goto(f"{live_server.url}/programs/{program.pk}/events")
    wait_ready(page, "#events")
    types = page.eval_on_selector_all("#events-rows tr", "rows => rows.map(row => row.dataset.eventType)")
    assert types == ["conversion", "lead", "click", "click", "click"]  # newest first; the test click is left out
    assert page.inner_text("#events-page-info") == "Page 1 of 1 · 5 events"

    page.select_option("#events-type", "lead")
    page.wait_for_function("document.querySelectorAll('#events-rows tr').length === 1")
    wait_ready(page, "#events")
    row = page.locator("#events-rows tr")
    assert row.get_attribute("data-event-type") == "lead"
    assert "user_42" in row.inner_text()
    assert page.url.endswith("?type=lead")

    page.select_option("#events-type", "conversion")
    page.wait_for_function("document.querySelector('#events-rows tr').dataset.eventType === 'conversion'")
    assert "49.00 USD" in page.inner_text("#events-rows")
    screenshot(page, "dashboard-events.png")

    # Each event links to how it was attributed: a sale by its transaction id.
    why = page.locator("#events-rows tr a.explain-link")
    assert "transaction_id=" in (why.get_attribute("href") or "")
    why.click()
    page.wait_for_url("**/explain?transaction_id=*")
    assert "Attribution explained" in page.inner_text("main")
    page.go_back()
    wait_ready(page, "#events")

    # A date range before any event leaves the table empty and says so.
    page.fill("#events-from", "2020-01-01")
    page.fill("#events-to", "2020-01-31")
    page.click("#events-filter button[type=submit]")
    page.wait_for_function("document.querySelectorAll('#events-rows tr').length === 0")
    assert page.inner_text("#events-status") == "No events match these filters."

    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/programs/{program.pk}/events")
    wait_ready(page, "#events")
    screenshot(page, "dashboard-events-phone.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_the_owner_regenerates_the_key_after_confirming_and_sees_it_once(tab, live_server, program, owner):
    page = tab.page
    sign_in(tab, live_server, owner)
    page.goto(f"{live_server.url}/programs/{program.pk}/key")
    before = ProgramKey.objects.get(program=program, mode="live").digest

    # Cancel changes nothing.
    page.click('button[data-regenerate-mode="live"]')
    assert page.locator("#regenerate-dialog").is_visible()
    page.click("#regenerate-cancel")
    assert not page.locator("#regenerate-dialog").is_visible()
    assert ProgramKey.objects.get(program=program, mode="live").digest == before

    page.click('button[data-regenerate-mode="live"]')
    assert page.inner_text("#regenerate-title") == "Regenerate the live key?"
    with page.expect_response(lambda response: response.url.endswith("/regenerate-key")) as answer:
        page.click("#regenerate-confirm")
    assert answer.value.status == 200
    page.wait_for_selector("#new-key:not([hidden])")
    new_key = page.inner_text("#new-key-value")
    assert new_key.startswith("aff_") and new_key != program.raw_api_key
    assert "It will not be shown again." in page.inner_text("#new-key")
    assert not page.locator("#regenerate-dialog").is_visible()
    live = ProgramKey.objects.get(program=program, mode="live")
    assert live.digest == key_digest(new_key)
    assert page.inner_text('[data-masked-for="live"]') == live.masked
    screenshot(page, "dashboard-key-regenerated.png")

    # Gone after a reload: the key lives only in that one response.
    page.reload()
    assert new_key not in page.content()
    assert page.locator("#new-key").is_hidden()


def test_a_member_sees_the_masked_key_but_no_regenerate_button(tab, live_server, program, member):
    page = tab.page
    sign_in(tab, live_server, member)
    assert page.locator(".program-card .badge").inner_text().lower() == "member"
    page.goto(f"{live_server.url}/programs/{program.pk}/key")
    assert page.inner_text('[data-masked-for="live"]') == ProgramKey.objects.get(program=program, mode="live").masked
    assert page.locator("[data-regenerate-mode]").count() == 0
    assert page.locator("#regenerate-dialog").count() == 0
    assert page.locator("#owner-only").is_visible()
    screenshot(page, "dashboard-key-member.png")

    # Members have no tracking:test either: the checklist loads, without the verification button.
    page.goto(f"{live_server.url}/programs/{program.pk}/readiness")
    wait_ready(page, "#readiness")
    assert page.locator("#run-verification").count() == 0


def test_the_readiness_checklist_and_a_verification_run(tab, live_server, program, owner):
    page = tab.page
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    sign_in(tab, live_server, owner)
    page.goto(f"{live_server.url}/programs/{program.pk}/readiness")
    wait_ready(page, "#readiness")
    statuses = dict(
        page.eval_on_selector_all(
            "#readiness-checks li", "items => items.map(li => [li.dataset.checkId, li.dataset.status])"
        )
    )
    assert statuses["referral_links"] == "pass" and statuses["clicks_received"] == "pass"
    assert statuses["stripe_connection"] == "warn"
    assert (
        page.locator('#readiness-checks li[data-check-id="stripe_connection"] .next')
        .inner_text()
        .startswith("Next step: Connect Stripe")
    )

    with page.expect_response(lambda response: "/api/tracking/run-verification/" in response.url) as answer:
        page.click("#run-verification")
    assert answer.value.status == 200
    page.wait_for_selector('#verification-result[data-success="true"]')
    steps = page.eval_on_selector_all("#verification-result li", "items => items.map(li => li.dataset.step)")
    assert steps == ["click", "lead", "sale"]
    assert ClickEvent.objects.filter(program=program, is_test=True).count() == 2  # the fixture's and the run's
    wait_ready(page, "#readiness")

    # Copy buttons put the snippet, with this server's address and the program id, on the clipboard.
    page.click('button[data-copy-target="#snippet-tracker"]')
    page.wait_for_selector('button[data-copy-target="#snippet-tracker"].copied')
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == (
        f'<script src="https://track.example.test/js/svc-tracker.js" data-svc-program-id="{program.pk}" defer></script>'
    )
    screenshot(page, "dashboard-readiness.png")
