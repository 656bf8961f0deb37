"""The Groups tab in headless Chromium at a laptop's 1366x900 and a phone's 390x844: every page of it (and the
Partners page with its group controls) fits its window and breaks no short word, forms refused show their errors
with focus on the first invalid field, and an owner makes a group with a discount, moves a partner into it and
gives them a code. Screenshots go to test-artifacts/groups-*.png."""

from dataclasses import dataclass

import pytest

from groups.models import CouponCode, PartnerGroup
from groups.rules import bonus_create, tier_rule_create
from groups.selectors import default_group
from groups.services import Move, group_create, partner_move
from programs.demo import demo_create
from programs.models import PartnerProgram, Program
from tests.browser.test_page_layouts_browser import ARTIFACTS, LAYOUT_PROBLEMS, LONGEST_UNBREAKABLE, SIZES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@dataclass
class World:
    program_id: int
    username: str
    password: str
    vip_id: int
    default_id: int
    empty_id: int
    partner_id: int


@pytest.fixture
def world() -> World:
    """The demo's main program with three more groups (one of them empty), a tier rule, two bonuses, a partner
    moved into VIP with two codes (one deactivated)."""
    demo = demo_create()
    program = Program.objects.get(pk=demo["programs"]["main"]["id"])
    default = default_group(program)
    vip = group_create(
        program=program,
        name="VIP partners",
        commission_type="recurring_percent",
        commission_rate=30,
        duration_months=12,
        hold_days=14,
        discount_type="percent",
        discount_percent=10,
        discount_duration="repeating",
        discount_duration_months=3,
        applications_open=True,
        application_questions=[{"label": "How many subscribers do you have?", "required": True}],
    )
    group_create(
        program=program,
        name="Podcasters and YouTube influencers (fixed reward)",
        commission_type="fixed",
        commission_rate=5000,
        discount_type="amount",
        discount_amount_cents=1250,
        discount_currency="EUR",
        discount_duration="forever",
    )
    empty = group_create(program=program, name="Empty group")
    tier_rule_create(group=default, target=vip, metric="revenue", period="quarter", threshold=1_000_000)
    tier_rule_create(group=vip, target=default, metric="sales", direction="demote", threshold=3)
    bonus_create(group=vip, name="First ten sales", metric="sales", threshold=10, amount_cents=5000)
    bonus_create(
        group=vip, name="A big quarter", metric="revenue", period="quarter", threshold=10_000_000, amount_cents=250_000
    )
    enrolment = PartnerProgram.objects.filter(program=program).select_related("partner").order_by("pk").first()
    assert enrolment is not None
    partner_move(enrolment=enrolment, group=vip, move=Move(reason="owner", actor="user:demo-owner"))
    CouponCode.objects.create(program=program, partner=enrolment.partner, code="JANE20")
    CouponCode.objects.create(
        program=program, partner=enrolment.partner, code="SUMMER-PODCAST-SPECIAL-2026", is_active=False
    )
    return World(
        program_id=program.pk,
        username=demo["users"]["owner"]["username"],
        password=demo["users"]["owner"]["password"],
        vip_id=vip.pk,
        default_id=default.pk,
        empty_id=empty.pk,
        partner_id=enrolment.partner_id,
    )


def sign_in(page, live_server, world: World) -> None:
    page.goto(f"{live_server.url}/")
    page.fill("#id_username", world.username)
    page.fill("#id_password", world.password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def pages_of(world: World) -> dict[str, str]:
    base = f"/programs/{world.program_id}"
    return {
        "list": f"{base}/groups #groups",
        "new": f"{base}/groups/new #group-form",
        "detail": f"{base}/groups/{world.vip_id} #tier-rules",
        "edit": f"{base}/groups/{world.vip_id}/edit #group-form",
        "edit-default": f"{base}/groups/{world.default_id}/edit #default-terms",
        "delete": f"{base}/groups/{world.empty_id}/delete #delete-group",
        "partner": f"{base}/partners/{world.partner_id}/group #codes",
        "partners": f"{base}/partners .partner-group",
    }


@pytest.mark.parametrize("size", SIZES)
def test_every_groups_page_fits_and_breaks_no_word(tab, live_server, world, size):
    page = tab.page
    page.set_viewport_size(SIZES[size])
    sign_in(page, live_server, world)
    ARTIFACTS.mkdir(exist_ok=True)
    found = {}
    for name, target in pages_of(world).items():
        path, ready = target.split(" ", 1)
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, name
        page.wait_for_selector(ready)
        page.screenshot(path=str(ARTIFACTS / f"groups-{name}-{size}.png"), full_page=True)
        problems = page.evaluate(LAYOUT_PROBLEMS, LONGEST_UNBREAKABLE)
        if problems:
            found[name] = problems
    assert found == {}, "\n".join(f"{name}: {problems}" for name, problems in found.items())
    assert tab.blocked == []


@pytest.mark.parametrize("size", SIZES)
def test_a_refused_form_shows_its_errors_and_focuses_the_first(tab, live_server, world, size):
    page = tab.page
    page.set_viewport_size(SIZES[size])
    sign_in(page, live_server, world)
    page.goto(f"{live_server.url}/programs/{world.program_id}/groups/new")
    page.fill("#id_name", "vip PARTNERS")
    page.fill("#id_commission_rate", "150")
    page.check("input[name=discount_type][value=percent]")
    page.fill("#id_discount_percent", "150")
    page.click("#save-group")
    page.wait_for_selector("[data-error-summary]")
    page.screenshot(path=str(ARTIFACTS / f"groups-new-refused-{size}.png"), full_page=True)
    summary = page.inner_text("[data-error-summary]")
    assert "A percent rate is at most 100." in summary and "Enter a percent greater than 0 and at most 100." in summary
    assert page.get_attribute("#id_commission_rate", "aria-invalid") == "true"
    assert page.evaluate(LAYOUT_PROBLEMS, LONGEST_UNBREAKABLE) == []
    assert PartnerGroup.objects.filter(program_id=world.program_id).count() == 4


def test_an_owner_makes_a_group_moves_a_partner_and_gives_a_code(tab, live_server, world):
    page = tab.page
    page.set_viewport_size(SIZES["phone"])
    sign_in(page, live_server, world)
    base = f"{live_server.url}/programs/{world.program_id}"
    page.goto(f"{base}/groups")
    page.click("#add-group")
    page.fill("#id_name", "Newsletter writers")
    page.select_option("#id_commission_type", "percent")
    page.fill("#id_commission_rate", "25")
    page.check("input[name=discount_type][value=percent]")
    page.fill("#id_discount_percent", "15")
    page.click("#save-group")
    page.wait_for_selector("#group-terms")
    assert page.inner_text("#group-terms") == "25% of every sale except renewals; held 30 days"
    assert page.inner_text("#group-discount") == "15% off the first payment"
    group = PartnerGroup.objects.get(program_id=world.program_id, name="Newsletter writers")

    page.goto(f"{base}/partners/{world.partner_id}/group")
    page.select_option("#id_group", str(group.pk))
    page.click("#move-partner")
    page.wait_for_selector(".messages li.success")
    assert "Newsletter writers" in page.inner_text("#current-group")

    page.fill("#id_code", "news 15")  # a space: refused on the form
    page.click("#add-code")
    page.wait_for_selector("[data-error-summary]")
    assert "coupon_code must be 1 to 100 letters, digits, - or _" in page.inner_text("#code-form")
    page.fill("#id_code", "news15")
    page.click("#add-code")
    page.wait_for_selector("#codes code:text('NEWS15')")
    page.screenshot(path=str(ARTIFACTS / "groups-journey-phone.png"), full_page=True)
    assert CouponCode.objects.get(code="NEWS15").partner_id == world.partner_id
    assert tab.blocked == []
