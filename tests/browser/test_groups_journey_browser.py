"""Issue 40's journey in real headless Chromium against the live service: the owner makes a group with a customer
discount on the dashboard, moves a partner into it and gives them a coupon code; the partner, signed in on a
phone-sized portal, sees the code and the group's terms in plain words; a checkout paid with the code (the shop's
backend sends the sale with coupon_code and no click) credits the partner at the group's rate, and the portal's
Commissions page shows it. Screenshots go to test-artifacts/groups-journey-*.png."""

from decimal import Decimal

import httpx
import pytest
from django.http import HttpResponse

from commissions.models import Commission
from groups.models import PartnerGroup
from portal import services, session
from programs.models import Role
from tests.browser.test_partner_journey_browser import OWNER_PASSWORD, PHONE, local_only, screenshot
from tests.factories import MembershipFactory, PartnerProgramFactory, ProgramFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_gives_a_group_discount_and_code_and_a_checkout_with_the_code_credits_the_partner(chromium, live_server):
    program = ProgramFactory(name="Acme Pro", domain="shop.example.com", commission_rate=Decimal("20"), hold_days=30)
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    partner = PartnerProgramFactory(program=program, partner__name="Jane Podcaster").partner
    partner.account = services.account_create(partner.email, "a long partner passphrase")
    partner.save(update_fields=["account"])
    base = f"{live_server.url}/programs/{program.pk}"

    owner_context = chromium.new_context(viewport={"width": 1366, "height": 900})
    owner_blocked = local_only(owner_context, live_server)
    page = owner_context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto(f"{live_server.url}/")
        page.fill("#id_username", owner.username)
        page.fill("#id_password", OWNER_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{base}/groups")
        page.click("#add-group")
        page.fill("#id_name", "Podcasters")
        page.select_option("#id_commission_type", "percent")
        page.fill("#id_commission_rate", "30")
        page.check("input[name=discount_type][value=percent]")
        page.fill("#id_discount_percent", "10")
        page.click("#save-group")
        page.wait_for_selector("#group-discount")
        assert page.inner_text("#group-discount") == "10% off the first payment"
        group = PartnerGroup.objects.get(program=program, name="Podcasters")
        page.goto(f"{base}/partners/{partner.pk}/group")
        page.select_option("#id_group", str(group.pk))
        page.click("#move-partner")
        page.wait_for_selector(".messages li.success")
        page.fill("#id_code", "jane10")
        page.click("#add-code")
        page.wait_for_selector("#codes code:text('JANE10')")
        screenshot(page, "groups-journey-owner-1366.png")
    finally:
        owner_context.close()
    assert owner_blocked == []

    # The shop's checkout took the code; its backend records the sale with the code alone (no click, no key).
    sale = httpx.post(
        f"{live_server.url}/api/v1/track/sale",
        json={"transaction_id": "ch_journey_1", "amount_cents": 12000, "coupon_code": "JANE10", "customer_key": "u77"},
        headers={"Authorization": f"Bearer {program.raw_api_key}"},
        timeout=15,
    )
    assert sale.status_code == 200, sale.text
    commission = Commission.objects.get(sale__processor_event_id="ch_journey_1")
    assert (commission.partner_id, commission.amount_cents, commission.group_id) == (partner.pk, 3600, group.pk)

    response = HttpResponse()
    session.sign_in(response, partner.account)
    partner_context = chromium.new_context(viewport=PHONE)
    partner_blocked = local_only(partner_context, live_server)
    partner_context.add_cookies(
        [{"name": session.COOKIE, "value": response.cookies[session.COOKIE].value, "url": f"{live_server.url}/portal/"}]
    )
    phone = partner_context.new_page()
    phone.set_default_timeout(15_000)
    try:
        phone.goto(f"{live_server.url}/portal/")
        screenshot(phone, "groups-journey-portal-390.png")
        main = " ".join((phone.text_content("main") or "").split())
        assert "Your group: Podcasters" in main
        assert "You earn 30% of each first payment (renewals pay nothing), paid after a 30-day hold." in main
        assert "Your audience gets 10% off the first payment." in main
        assert phone.get_by_role("button", name="Copy the code JANE10").is_visible()
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        phone.goto(f"{live_server.url}/portal/commissions")
        commissions = phone.text_content("main") or ""
        assert "36.00" in commissions
        screenshot(phone, "groups-journey-commissions-390.png")
    finally:
        partner_context.close()
    assert partner_blocked == []
