"""The review tab in real headless Chromium against the live service: an owner signs in, opens the Review tab, sees
a commission a rule held and a flagged click, releases the commission with a reason, and sees it gone from the
held list and the decision listed (the partner credited). Screenshots go to test-artifacts/review-*.png."""

from pathlib import Path

import pytest

from commissions.models import CommissionReview, LedgerEntry
from programs.models import Role
from tests.dashboard.pages.review_rows import click, held_by_rule, link_of
from tests.factories import MembershipFactory, ProgramFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PASSWORD = "pass-word-123"  # UserFactory's


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_an_owner_releases_a_held_commission_from_the_review_tab(tab, live_server):
    program = ProgramFactory(name="Acme Pro", domain="acme.example.com")
    owner = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    link = link_of(program)
    held = held_by_rule(link)
    flagged = click(link, flags=["paid_ads"])
    page = tab.page

    page.goto(f"{live_server.url}/programs/{program.pk}/")
    page.fill("#id_username", owner.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/programs/{program.pk}/")
    page.click("nav.tabs >> text=Review")
    page.wait_for_url(f"{live_server.url}/programs/{program.pk}/review")

    assert page.locator(f"#held-{held.pk}").count() == 1
    assert "self-referral" in page.inner_text(f"#held-{held.pk}").lower()  # badges are capitalised
    assert "paid_ads" in page.inner_text(f"#click-{flagged.pk}")
    assert page.locator("#no-decisions").count() == 1
    screenshot(page, "review-held.png")

    page.fill(f"#held-{held.pk} form:has([data-release]) input[name=reason]", "customer verified by phone")
    page.click(f"[data-release='{held.pk}']")

    page.wait_for_selector("#no-held")
    assert page.url == f"{live_server.url}/programs/{program.pk}/review"
    assert f"Commission #{held.pk} released" in page.inner_text(".messages")
    review = CommissionReview.objects.get(commission=held)
    decision = page.inner_text(f"#decision-{review.pk}")
    assert "released" in decision.lower() and f"user:{owner.username}" in decision
    assert "customer verified by phone" in decision
    held.refresh_from_db()
    assert held.held_at is None and held.status == "approved"
    assert LedgerEntry.objects.filter(commission=held, kind=LedgerEntry.Kind.CREDIT).exists()
    screenshot(page, "review-released.png")
