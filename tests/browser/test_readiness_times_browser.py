"""The readiness page shows a mistake's last time as every dashboard time reads ("2026-01-31 14:05:09 UTC", from
formatTime), not in the browser's local format."""

import re

import httpx
import pytest

from programs.models import Role
from tests.browser.test_dashboard_browser import sign_in, wait_ready
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_mistakes_last_time_is_in_utc_to_the_second(tab, live_server):
    program = ProgramFactory(domain="acme.example.com")
    ReferralLinkFactory(program=program)
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    sale = {"transaction_id": "t1", "amount_cents": 100, "customer_key": "u1", "currency": "XYZ"}
    headers = {"Authorization": f"Bearer {program.raw_api_key}"}
    assert httpx.post(f"{live_server.url}/api/v1/track/sale", json=sale, headers=headers).status_code == 422
    page = tab.page
    page.set_default_timeout(15_000)
    sign_in(tab, live_server, owner)

    page.goto(f"{live_server.url}/programs/{program.pk}/readiness")
    wait_ready(page, "#readiness")

    item = page.locator('#readiness-mistakes li[data-mistake-code="unsupported_currency"]')
    detail = item.locator(".detail").inner_text().strip()
    assert re.fullmatch(r"unsupported_currency, last \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC", detail), detail
