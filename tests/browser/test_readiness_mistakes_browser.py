"""The dashboard's readiness page lists the mistakes readiness names (insight.diagnosis), each with its fix."""

import httpx
import pytest

from programs.models import Role
from tests.browser.test_dashboard_browser import sign_in, wait_ready
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_readiness_page_lists_each_mistake_with_its_fix(tab, live_server):
    program = ProgramFactory(domain="acme.example.com")
    ReferralLinkFactory(program=program)
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    page = tab.page
    page.set_default_timeout(15_000)
    sign_in(tab, live_server, owner)
    page.goto(f"{live_server.url}/programs/{program.pk}/readiness")
    wait_ready(page, "#readiness")
    assert page.locator("#readiness-mistakes-section").is_hidden()

    sale = {"transaction_id": "t1", "amount_cents": 100, "customer_key": "u1", "currency": "XYZ"}
    headers = {"Authorization": f"Bearer {program.raw_api_key}"}
    assert httpx.post(f"{live_server.url}/api/v1/track/sale", json=sale, headers=headers).status_code == 422
    page.reload()
    wait_ready(page, "#readiness")
    item = page.locator('#readiness-mistakes li[data-mistake-code="unsupported_currency"]')
    assert "XYZ" in item.locator(".title").inner_text()
    assert item.locator(".next").inner_text().startswith("Fix: Send currency as one of USD, EUR, VND")
    assert page.locator("#readiness-verdict").inner_text().count("Send currency as one of") == 1
