"""Every surface that shows commission money tells the same story (issue 9, "One set of numbers").

The reported case: two commissions on a 30-day hold, both partly refunded while pending. The overview showed
0.00, the partners page 29.80 (a counter refunds never reduced) and the commissions page "clawed back 2.00" (for a
commission never credited). Here the sales and refunds go through the HTTP API, then the performance API (the
overview's numbers), the partners page, the commissions page, the admin list and the partner's ledger are read."""

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from commissions.approval import commissions_approve_due
from commissions.models import Commission
from commissions.selectors import commissions_with_money
from commissions.services import partner_balance
from programs.models import Role
from tests.factories import CustomerFactory, MembershipFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

SALES = {"order_1": 10000, "order_2": 4900}  # commissions at 20%: 20.00 + 9.80 = 29.80
REFUNDS = {"order_1": 1000, "order_2": 500}  # clawed-back shares: 2.00 and 1.00


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def run_the_scenario(api_client, *, hold_days: int):
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=hold_days)
    link = ReferralLinkFactory(program=program)
    for n, (transaction_id, amount) in enumerate(SALES.items()):
        customer = CustomerFactory.create(link=link, customer_key=f"user_{n}")
        body = {"transaction_id": transaction_id, "amount_cents": amount, "customer_key": customer.customer_key}
        sale = api_client.post("/api/v1/track/sale", body, format="json", **bearer(program.raw_api_key))
        assert sale.json()["commission_id"] is not None
    for transaction_id, amount in REFUNDS.items():
        body = {"transaction_id": transaction_id, "refund_amount_cents": amount}
        refund = api_client.post("/api/v1/track/refund", body, format="json", **bearer(program.raw_api_key))
        assert refund.json()["status"] == "refunded"
    return program, link


def surfaces(program, link) -> dict[str, Any]:
    """Commission money as each surface shows it, in cents (pages show major units: parsed back)."""
    owner = signed_in(MembershipFactory(workspace=program.workspace, role=Role.OWNER).user)
    today = timezone.now().date()
    since = (today - timedelta(days=90)).isoformat()
    performance = owner.get(
        f"/api/tracking/performance/{program.pk}", {"dateFrom": since, "dateTo": today.isoformat()}
    ).json()["data"]
    [partner_row] = performance["by_partner"]

    partners_page = owner.get(f"/programs/{program.pk}/partners").content.decode()
    card = partners_page[partners_page.index(f'id="partner-{link.partner_id}"') :].split("</section>")[0]
    partners_commission = card.split("<dt>Commission</dt><dd>")[1].split("</dd>")[0]

    commissions_page = owner.get(f"/programs/{program.pk}/commissions").content.decode()
    rows = {}
    for commission in Commission.objects.select_related("sale"):
        row = commissions_page[commissions_page.index(f'id="commission-{commission.pk}"') :].split("</tr>")[0]
        still_pays = row.split('data-label="Still pays">')[1].split("</td>")[0]
        clawed_back = row.split('data-label="Clawed back">')[1].split("</td>")[0]
        assert commission.sale is not None
        rows[commission.sale.processor_event_id] = (still_pays, clawed_back)

    operator = get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123")
    admin_page = signed_in(operator).get("/admin/commissions/commission/").content.decode()
    admin_payable = sorted(int(cell.split("</td>")[0]) for cell in admin_page.split('<td class="field-payable">')[1:])

    return {
        "overview_total": performance["totals"]["commission_cents"],
        "performance_by_partner": partner_row["commission_cents"],
        "partners_page": partners_commission,
        "commissions_page": rows,
        "admin_payable": admin_payable,
        "selector_total": sum(c.payable_cents for c in commissions_with_money()),
        "ledger_balance": partner_balance(partner_id=link.partner_id, currency="USD"),
    }


def test_pending_commissions_partly_refunded_pay_nothing_on_every_surface(api_client):
    program, link = run_the_scenario(api_client, hold_days=30)

    assert surfaces(program, link) == {
        "overview_total": 0,
        "performance_by_partner": 0,
        "partners_page": "0.00",
        # cancelled whole while pending: nothing paid, and nothing clawed back as nothing was ever credited
        "commissions_page": {"order_1": ("0.00 USD", "–"), "order_2": ("0.00 USD", "–")},
        "admin_payable": [0, 0],
        "selector_total": 0,
        "ledger_balance": 0,
    }


def test_a_cancelled_commission_stays_at_zero_after_its_hold_ends(api_client, time_machine):
    program, link = run_the_scenario(api_client, hold_days=30)
    time_machine.move_to(timezone.now() + timedelta(days=31), tick=False)
    assert commissions_approve_due() == 0
    numbers = surfaces(program, link)
    assert (numbers["partners_page"], numbers["selector_total"], numbers["ledger_balance"]) == ("0.00", 0, 0)


def test_credited_commissions_partly_refunded_pay_the_rest_on_every_surface(api_client):
    program, link = run_the_scenario(api_client, hold_days=0)

    assert surfaces(program, link) == {
        "overview_total": 1800 + 880,
        "performance_by_partner": 1800 + 880,
        "partners_page": "26.80",
        "commissions_page": {"order_1": ("18.00 USD", "2.00 USD"), "order_2": ("8.80 USD", "1.00 USD")},
        "admin_payable": [880, 1800],
        "selector_total": 2680,
        "ledger_balance": 2680,  # credits 29.80, clawbacks 3.00
    }


def test_approved_after_the_hold_then_refunded_agrees_with_the_ledger(api_client, time_machine):
    program = ProgramFactory(commission_type="percent", commission_rate=Decimal("20"), hold_days=30)
    link = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link, customer_key="user_0")
    body = {"transaction_id": "order_1", "amount_cents": 10000, "customer_key": customer.customer_key}
    api_client.post("/api/v1/track/sale", body, format="json", **bearer(program.raw_api_key))
    time_machine.move_to(timezone.now() + timedelta(days=31), tick=False)
    assert commissions_approve_due() == 1
    refund = {"transaction_id": "order_1", "refund_amount_cents": 2500}
    assert (
        api_client.post("/api/v1/track/refund", refund, format="json", **bearer(program.raw_api_key)).json()[
            "deductionAmount"
        ]
        == 500
    )

    numbers = surfaces(program, link)
    assert numbers["partners_page"] == "15.00"
    assert numbers["commissions_page"] == {"order_1": ("15.00 USD", "5.00 USD")}
    assert numbers["selector_total"] == numbers["ledger_balance"] == numbers["admin_payable"][0] == 1500
