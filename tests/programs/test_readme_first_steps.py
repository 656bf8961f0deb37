"""The README's "First steps as an operator", walked over HTTP as a newcomer would: `createsuperuser`, then
`owner_start` for that user, sign in, the program's page, the README's click, lead and sale with the key the
command printed, and the commission on the Commissions page. Each step reads only what the previous one printed
or answered."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from commissions.models import Commission
from tracking.models import ClickEvent

pytestmark = pytest.mark.django_db

PASSWORD = "first-steps-pass-42"


def _printed(text: str, pattern: str) -> str:
    found = re.search(pattern, text, re.MULTILINE)
    assert found, f"{pattern!r} not in:\n{text}"
    return found.group(1)


def test_from_createsuperuser_to_a_commission_on_the_dashboard(monkeypatch, settings):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command("createsuperuser", "--no-input", "--username", "ops", "--email", "ops@example.com", stdout=StringIO())
    browser = APIClient()

    # Signed in before owner_start: the operator belongs to no workspace, so no program is listed.
    assert browser.post("/accounts/login/", {"username": "ops", "password": PASSWORD}).status_code == 302
    assert "program-name" not in browser.get("/").content.decode()
    browser.logout()

    out = StringIO()
    call_command(
        "owner_start",
        "--email",
        "ops@example.com",
        "--program",
        "My shop",
        "--domain",
        "shop.example.com",
        "--partner",
        "First partner",
        stdout=out,
    )
    printed = out.getvalue()
    key = _printed(printed, r"^  live key  (aff_\S+)$")
    code = _printed(printed, r"^Referral link (\S+): created")
    sign_in = _printed(printed, r"^Sign in: http://127\.0\.0\.1:8000(/\S+) as ops$")
    program_page = _printed(printed, r"^Your program: http://127\.0\.0\.1:8000(/programs/\d+/)")

    # 1. Sign in with the printed username; the program list shows the program, its page opens.
    signed_in = browser.post(sign_in, {"username": "ops", "password": PASSWORD})
    assert (signed_in.status_code, signed_in.headers["Location"]) == (302, "/")
    listed = browser.get("/")
    assert listed.status_code == 200 and "My shop" in listed.content.decode()
    overview = browser.get(program_page)
    assert overview.status_code == 200 and "My shop" in overview.content.decode()

    # 2. The README's click, lead and sale, with the printed key and link code.
    shop = APIClient()
    click = shop.post("/api/v1/track/click", {"affiliate_url": f"https://shop.example.com/?aff={code}"}, format="json")
    assert click.status_code == 200, click.content
    click_id = click.json()["click_id"]
    shop.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    lead = shop.post("/api/v1/track/lead", {"click_id": click_id, "customer_key": "user-1"}, format="json")
    assert lead.status_code == 200, lead.content
    sale = shop.post(
        "/api/v1/track/sale",
        {"transaction_id": "txn-1", "amount_cents": 4900, "customer_key": "user-1"},
        format="json",
    )
    assert sale.status_code == 200, sale.content
    commission_id = sale.json()["commission_id"]
    assert commission_id is not None

    # 3. The Commissions tab shows it: the partner, pending, 20% of 49.00.
    commissions = browser.get(f"{program_page}commissions")
    assert commissions.status_code == 200
    page = commissions.content.decode()
    row = page[page.index(f'id="commission-{commission_id}"') :].split("</tr>")[0]
    assert "First partner" in row and "pending" in row and "9.80" in row
    assert Commission.objects.get(pk=commission_id).amount_cents == 980

    # The README's note: a second click from the same machine is set aside as a duplicate, listed on Review.
    again = APIClient().post(
        "/api/v1/track/click", {"affiliate_url": f"https://shop.example.com/?aff={code}"}, format="json"
    )
    assert again.status_code == 200
    assert sorted(ClickEvent.objects.values_list("traffic", flat=True)) == ["", "duplicate"]
    review = browser.get(f"{program_page}review?kind=duplicate").content.decode()
    assert 'data-traffic="duplicate"' in review
