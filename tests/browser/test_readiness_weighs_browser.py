"""The readiness page in Chromium (issue 25): a mistake that lost calls fails the checklist (its own row, the worst
first) and the verdict, shows as a failure in the mistakes list with its docs link, and every status icon is an
image with a name; clicks set aside have their row."""

import httpx
import pytest

from programs.models import Role
from tests.browser.test_dashboard_browser import sign_in, wait_ready
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_mistakes_weigh_in_the_verdict_and_the_checklist(tab, live_server):
    program = ProgramFactory(domain="acme.example.com")
    link = ReferralLinkFactory(program=program)
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    headers = {"Authorization": f"Bearer {program.raw_api_key}"}
    for _ in range(3):  # one visitor: one click counted, two set aside
        click = {"affiliate_url": f"https://acme.example.com/?aff={link.short_link}"}
        assert httpx.post(f"{live_server.url}/api/v1/track/click", json=click, headers=headers).status_code == 200
    sale = {"transaction_id": "t1", "amount_cents": 100, "customer_key": "u1", "currency": "XYZ"}
    assert httpx.post(f"{live_server.url}/api/v1/track/sale", json=sale, headers=headers).status_code == 422

    page = tab.page
    page.set_default_timeout(15_000)
    sign_in(tab, live_server, owner)
    page.goto(f"{live_server.url}/programs/{program.pk}/readiness")
    wait_ready(page, "#readiness")

    assert page.locator("#readiness-verdict strong").inner_text() == "Not ready yet."
    row = page.locator('#readiness-checks li[data-check-id="integration_mistakes"]')
    assert row.get_attribute("data-status") == "fail"
    assert "1 mistake(s) in the last 7 days of calls, worst first" in row.locator(".detail").inner_text()
    set_aside = page.locator('#readiness-checks li[data-check-id="clicks_set_aside"] .detail').inner_text()
    assert "2 duplicate" in set_aside
    assert "2 clicks set aside" in page.locator("#readiness-verdict .counts").inner_text()

    mistake = page.locator('#readiness-mistakes li[data-mistake-code="unsupported_currency"]')
    assert mistake.get_attribute("data-severity") == "fail" and "fail" in (mistake.get_attribute("class") or "")
    assert mistake.locator("a").get_attribute("href") == "/docs/readiness#unsupported_currency"

    icons = page.locator("#readiness .icon")
    assert icons.count() >= 9
    for index in range(icons.count()):
        icon = icons.nth(index)
        assert icon.get_attribute("role") == "img" and icon.get_attribute("aria-label")

    mistake.locator("a").click()
    page.wait_for_url(f"{live_server.url}/docs/readiness#unsupported_currency")
    assert page.locator("h3#unsupported_currency").is_visible()
