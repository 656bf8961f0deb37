"""The portal's program card on a phone (390 px) in real headless Chromium: the partner's group, terms, discount,
coupon codes with working copy buttons and progress fit the screen without sideways scrolling. A screenshot goes to
test-artifacts/portal-groups-phone.png."""

from decimal import Decimal

import pytest
from django.http import HttpResponse

from groups.models import Bonus, CouponCode, PartnerGroup, TierRule
from portal import services, session
from tests.browser.test_partner_journey_browser import PHONE, local_only, screenshot
from tests.factories import CustomerFactory, PartnerProgramFactory, ProgramFactory, ReferralLinkFactory, SaleFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_partner_sees_their_group_and_copies_a_code_on_a_phone(chromium, live_server):
    program = ProgramFactory(name="Acme Pro with a rather long program name", domain="shop.example.com")
    vip = PartnerGroup.objects.create(
        program=program,
        name="VIP creators",
        slug="vip",
        commission_type="recurring_percent",
        commission_rate=Decimal("30"),
        duration_months=12,
        discount_type="percent",
        discount_percent=Decimal("10"),
        discount_duration="repeating",
        discount_duration_months=3,
    )
    gold = PartnerGroup.objects.create(program=program, name="Gold", slug="gold", commission_rate=Decimal("40"))
    TierRule.objects.create(group=vip, target=gold, metric="revenue", period="quarter", threshold=1_000_000)
    Bonus.objects.create(group=vip, name="First ten", metric="sales", threshold=10, amount_cents=5000)
    enrolment = PartnerProgramFactory(program=program, partner__name="Jane", group=vip)
    partner = enrolment.partner
    CouponCode.objects.create(program=program, partner=partner, code="JANE10")
    CouponCode.objects.create(program=program, partner=partner, code="JANEPODCASTSPRINGSPECIAL2026")
    link = ReferralLinkFactory(program=program, partner=partner)
    for _ in range(3):
        SaleFactory(customer=CustomerFactory(link=link), amount_cents=25000)
    partner.account = services.account_create(partner.email, "a long partner passphrase")
    partner.save(update_fields=["account"])
    response = HttpResponse()
    session.sign_in(response, partner.account)

    context = chromium.new_context(viewport=PHONE)
    blocked = local_only(context, live_server)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    context.add_cookies(
        [{"name": session.COOKIE, "value": response.cookies[session.COOKIE].value, "url": f"{live_server.url}/portal/"}]
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto(f"{live_server.url}/portal/")
        main = page.text_content("main") or ""
        assert "You earn 30% of every sale for 12 months, paid after a 30-day hold." in main
        assert "Your audience gets 10% off every payment for 3 months." in main
        assert "Move to Gold" in main and "750.00 in revenue" in main
        assert "First ten: 50.00 USD bonus" in main and "3 sales" in main
        button = page.get_by_role("button", name="Copy the code JANE10")
        assert button.is_visible()
        button.click()
        page.wait_for_function("document.activeElement && document.activeElement.textContent !== 'Copy code'")
        assert button.text_content() in ("Copied", "Selected: copy it")
        if button.text_content() == "Copied":
            assert page.evaluate("navigator.clipboard.readText()") == "JANE10"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        screenshot(page, "portal-groups-phone.png")
    finally:
        context.close()
    assert blocked == []
