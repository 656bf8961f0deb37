"""The partner program's whole journey in real headless Chromium against the live service: the owner invites a
partner from the dashboard's Partners page; the partner follows the emailed link in a browser of their own, sets a
password, lands in the portal and makes a link; a visitor clicks it; the integrator's backend sends the lead and the
sale; the partner sees the click and the pending commission; after the hold period (time moved on) the commission
is approved and credited, and the balance shows it. Screenshots go to test-artifacts/portal-*.png."""

import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from django.core import mail
from django.utils import timezone

from commissions.approval import commissions_approve_due
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
OWNER_PASSWORD = "pass-word-123"  # UserFactory's
PARTNER_PASSWORD = "a long partner passphrase"
PHONE = {"width": 390, "height": 844}


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def local_only(context, live_server) -> list[str]:
    """Nothing but the live service may be reached from this browser profile; what else was asked is noted."""
    blocked: list[str] = []
    allowed = urlsplit(live_server.url).netloc

    def route(request_route) -> None:
        if urlsplit(request_route.request.url).netloc == allowed:
            request_route.continue_()
        else:
            blocked.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    return blocked


def test_invited_partner_joins_shares_a_link_and_is_paid_after_the_hold(chromium, tab, live_server):
    program = ProgramFactory(
        name="Acme Pro",
        domain="shop.example.com",
        commission_type="percent",
        commission_rate=Decimal("20"),
        hold_days=30,
        partner_codes_allowed=True,
    )
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    base = live_server.url

    # The owner invites the partner from the Partners page.
    page = tab.page
    page.goto(f"{base}/programs/{program.pk}/partners")
    page.fill("#id_username", owner.username)
    page.fill("#id_password", OWNER_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/programs/{program.pk}/partners")
    page.fill("#invite-name", "Pat Partner")
    page.fill("#invite-email", "pat@example.com")
    page.click("form.invite button")
    page.wait_for_selector("text=Invitation sent to pat@example.com")
    [message] = mail.outbox
    # The link is under PUBLIC_BASE_URL (the tests' is not this live server): its path is what matters here.
    found = re.search(r"/portal/invitations/[A-Za-z0-9_-]+", str(message.body))
    assert found is not None
    invitation_link = base + found.group(0)

    # The partner, in a browser of their own (a phone), sets a password and lands in the portal.
    context = chromium.new_context(viewport=PHONE)
    blocked = local_only(context, live_server)
    partner = context.new_page()
    partner.set_default_timeout(15_000)
    try:
        partner.goto(invitation_link)
        partner.fill("#password", PARTNER_PASSWORD)
        partner.fill("#password2", PARTNER_PASSWORD)
        partner.click("button")
        partner.wait_for_url(f"{base}/portal/")
        assert "Acme Pro" in partner.text_content("main")
        assert "20% of each sale" in partner.text_content("main")
        # The owner's dashboard session is the owner's browser's only: the partner's browser has none.
        partner.goto(f"{base}/programs/{program.pk}/partners")
        assert "/accounts/login/" in partner.url

        # A link with the partner's own code.
        partner.goto(f"{base}/portal/links")
        partner.fill("input[name=code]", "pat-summer")
        partner.click("form button:has-text('link')")
        partner.wait_for_selector("text=https://shop.example.com/?aff=pat-summer")
        assert partner.locator("svg").count() >= 1  # the QR code
        screenshot(partner, "portal-links.png")

        # A visitor clicks it; the integrator's backend sends the lead and the sale with the program key.
        key = {"Authorization": f"Bearer {program.raw_api_key}"}
        with httpx.Client(base_url=base, timeout=15) as backend:
            click = backend.post(
                "/api/v1/track/click",
                json={"affiliate_url": "https://shop.example.com/?aff=pat-summer"},
                headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"},
            )
            assert click.status_code == 200, click.text
            click_id = click.json()["click_id"]
            lead = backend.post(
                "/api/v1/track/lead", json={"click_id": click_id, "customer_key": "user_42"}, headers=key
            )
            assert lead.status_code == 200, lead.text
            sale = backend.post(
                "/api/v1/track/sale",
                json={"transaction_id": "txn_journey", "amount_cents": 10000, "customer_key": "user_42"},
                headers=key,
            )
            assert sale.status_code == 200, sale.text

        # The partner sees the click and the pending commission.
        partner.goto(f"{base}/portal/performance")
        performance = partner.text_content("main")
        assert re.search(r"Clicks\s*1\b", performance), performance
        partner.goto(f"{base}/portal/commissions")
        hold_ends = (timezone.now() + timedelta(days=30)).date().isoformat()
        commissions = partner.text_content("main")
        assert f"pending until {hold_ends}" in commissions and "20.00 USD" in commissions
        assert "user_42" not in partner.content() and click_id not in partner.content()  # customers masked
        screenshot(partner, "portal-commissions-pending.png")
        # Good on a phone: nothing wider than its screen.
        assert partner.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

        # Thirty-one days on, the hold job approves and credits it.
        assert commissions_approve_due(now=timezone.now() + timedelta(days=31)) == 1
        partner.goto(f"{base}/portal/commissions")
        assert "approved" in partner.text_content("main")
        partner.goto(f"{base}/portal/balance")
        balance = partner.text_content("main")
        assert "20.00 USD" in balance
        screenshot(partner, "portal-balance.png")
    finally:
        context.close()
    assert blocked == []
