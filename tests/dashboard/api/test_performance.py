"""GET /api/tracking/performance/:programId"""

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import CommissionFactory, CustomerFactory, PartnerFactory, ReferralLinkFactory, SaleFactory
from tests.helpers import bad_request
from tracking.models import ClickEvent, LeadEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen")]

NOW = datetime(2025, 5, 20, 15, 30, tzinfo=UTC)
DAY1 = datetime(2025, 5, 18, 9, 0, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)


def performance(client, program, **params):
    return client.get(f"/api/tracking/performance/{program.pk}", params)


def zero(day: str) -> dict:
    return {"date": day, "clicks": 0, "leads": 0, "sales": 0, "revenue_cents": 0, "commission_cents": 0}


@pytest.fixture
def alice_link(program):
    return ReferralLinkFactory(program=program, partner=PartnerFactory(workspace=program.workspace, name="Alice"))


@pytest.fixture
def bob_link(program):
    return ReferralLinkFactory(program=program, partner=PartnerFactory(workspace=program.workspace, name="Bob"))


def click(link, when, **extra):
    customer = CustomerFactory(link=link)
    ClickEvent.objects.create(
        program=link.program, partner=link.partner, link=link, customer=customer, click_timestamp=when, **extra
    )
    return customer


def lead(customer, when, **extra):
    LeadEvent.objects.create(
        program=customer.program,
        customer=customer,
        partner=customer.first_partner,
        click_id=customer.click_id,
        lead_timestamp=when,
        **extra,
    )


def sale(customer, when, amount, commission=None, status="pending", deducted=0, credited=False, **extra):
    event = SaleFactory(customer=customer, sale_date=when, amount_cents=amount, **extra)
    if commission is not None:
        CommissionFactory(
            sale=event, amount_cents=commission, status=status, deducted_cents=deducted, credited=credited
        )
    return event


@pytest.fixture
def activity(program, alice_link, bob_link):
    a1 = click(alice_link, DAY1)
    a2 = click(alice_link, DAY1 + timedelta(hours=14, minutes=59, seconds=59))  # 23:59:59, still DAY1
    b1 = click(bob_link, DAY2)
    click(alice_link, DAY1, is_test=True)
    click(alice_link, DAY1 - timedelta(days=40))  # outside the default range
    lead(a1, DAY1)
    lead(b1, DAY2, provisional=True)  # waiting for the server: not counted
    lead(a2, DAY1, is_test=True)
    sale(a1, DAY2, 10000, commission=2000)
    sale(a1, DAY2, 3000, commission=600, status="reversed", deducted=600)  # counts, pays nothing
    sale(b1, DAY2, 5000, commission=1000, status="refunded", deducted=400, credited=True)  # pays 600
    sale(b1, DAY2, 700)  # the policy paid nothing for it
    sale(a2, DAY2, 999, attributed=False)  # not attributed: not counted
    sale(a2, DAY2, 888, commission=100, is_test=True)  # test: not counted


def test_it_reports_totals_days_and_partners(owner, program, activity, alice_link, bob_link):
    response = performance(owner, program)
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["range"] == {"from": "2025-04-21", "to": "2025-05-20"}
    assert data["totals"] == {"clicks": 3, "leads": 1, "sales": 4, "revenue_cents": 18700, "commission_cents": 2600}
    assert len(data["by_day"]) == 30
    assert data["by_day"][0] == zero("2025-04-21")
    assert data["by_day"][-1] == zero("2025-05-20")
    assert [row for row in data["by_day"] if row["clicks"] or row["sales"]] == [
        {"date": "2025-05-18", "clicks": 2, "leads": 1, "sales": 0, "revenue_cents": 0, "commission_cents": 0},
        {"date": "2025-05-19", "clicks": 1, "leads": 0, "sales": 4, "revenue_cents": 18700, "commission_cents": 2600},
    ]
    assert data["by_partner"] == [
        {
            "partner_id": alice_link.partner_id,
            "partner_name": "Alice",
            "clicks": 2,
            "leads": 1,
            "sales": 2,
            "revenue_cents": 13000,
            "commission_cents": 2000,
        },
        {
            "partner_id": bob_link.partner_id,
            "partner_name": "Bob",
            "clicks": 1,
            "leads": 0,
            "sales": 2,
            "revenue_cents": 5700,
            "commission_cents": 600,
        },
    ]


def test_days_are_utc_days_and_the_range_is_inclusive(owner, program, alice_link):
    click(alice_link, datetime(2025, 5, 1, 0, 0, tzinfo=UTC))
    click(alice_link, datetime(2025, 5, 2, 23, 59, 59, 999999, tzinfo=UTC))
    click(alice_link, datetime(2025, 5, 3, 0, 0, tzinfo=UTC))
    click(alice_link, datetime(2025, 4, 30, 23, 59, 59, 999999, tzinfo=UTC))
    data = performance(owner, program, dateFrom="2025-05-01", dateTo="2025-05-02").json()["data"]
    assert data["range"] == {"from": "2025-05-01", "to": "2025-05-02"}
    assert [(row["date"], row["clicks"]) for row in data["by_day"]] == [("2025-05-01", 1), ("2025-05-02", 1)]
    assert data["totals"]["clicks"] == 2


def test_one_day(owner, program, activity):
    data = performance(owner, program, dateFrom="2025-05-19", dateTo="2025-05-19").json()["data"]
    assert data["by_day"] == [
        {"date": "2025-05-19", "clicks": 1, "leads": 0, "sales": 4, "revenue_cents": 18700, "commission_cents": 2600}
    ]


def test_partners_are_sorted_by_revenue(owner, program, alice_link, bob_link):
    sale(click(alice_link, DAY1), DAY1, 100, commission=20)
    sale(click(bob_link, DAY1), DAY1, 900, commission=180)
    data = performance(owner, program).json()["data"]
    assert [row["partner_name"] for row in data["by_partner"]] == ["Bob", "Alice"]


def test_other_programs_are_left_out(owner, program, activity):
    other = ReferralLinkFactory()
    sale(click(other, DAY1), DAY1, 5555, commission=1111)
    assert performance(owner, program).json()["data"]["totals"]["revenue_cents"] == 18700


def test_an_empty_program(owner, program):
    data = performance(owner, program, dateFrom="2025-05-19", dateTo="2025-05-20").json()["data"]
    assert data == {
        "range": {"from": "2025-05-19", "to": "2025-05-20"},
        "totals": {"clicks": 0, "leads": 0, "sales": 0, "revenue_cents": 0, "commission_cents": 0},
        "by_day": [zero("2025-05-19"), zero("2025-05-20")],
        "by_partner": [],
    }


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"dateFrom": "2025-01-01"}, ("2025-01-01", "2025-01-30")),
        ({"dateTo": "2025-01-30"}, ("2025-01-01", "2025-01-30")),
        ({"dateFrom": "2024-05-20", "dateTo": "2025-05-20"}, ("2024-05-20", "2025-05-20")),  # 366 days
    ],
)
def test_range_defaults_and_the_longest_range(owner, program, params, expected):
    data = performance(owner, program, **params).json()["data"]
    assert (data["range"]["from"], data["range"]["to"]) == expected
    assert data["by_day"][0]["date"] == expected[0] and data["by_day"][-1]["date"] == expected[1]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dateFrom": "2024-05-19", "dateTo": "2025-05-20"}, "The date range must be at most 366 days"),
        ({"dateFrom": "2025-05-21", "dateTo": "2025-05-20"}, "dateFrom must not be after dateTo"),
        ({"dateFrom": "2025-05-01T00:00:00Z"}, "dateFrom must be a date (YYYY-MM-DD)"),
        ({"dateTo": "May 1"}, "dateTo must be a date (YYYY-MM-DD)"),
        ({"dateTo": "2025-02-29"}, "dateTo must be a date (YYYY-MM-DD)"),
    ],
)
def test_it_refuses_bad_ranges(owner, program, params, message):
    response = performance(owner, program, **params)
    assert response.status_code == 400
    assert response.json() == bad_request(message)


def test_it_aggregates_in_a_fixed_number_of_queries(owner, program, activity, django_assert_num_queries):
    # 1 session, 2 user, 3 program, 4 membership,
    # 5 clicks per day, 6 clicks per partner (partner joined for its name),
    # 7 settled leads per day, 8 per partner,
    # 9 attributed sales per day, 10 per partner (commission LEFT JOINed for its sums)
    with django_assert_num_queries(10):
        assert performance(owner, program).status_code == 200


def test_events_of_a_deleted_partner_are_grouped_without_a_partner(owner, program, alice_link):
    customer = click(alice_link, DAY1)
    ClickEvent.objects.create(program=program, partner=None, customer=customer, click_timestamp=DAY1)
    rows = performance(owner, program).json()["data"]["by_partner"]
    assert [(row["partner_id"], row["partner_name"], row["clicks"]) for row in rows] == [
        (alice_link.partner_id, "Alice", 1),
        (None, "(no partner)", 1),
    ]


def test_a_pending_commission_cancelled_by_a_partial_refund_pays_nothing(owner, program, alice_link):
    customer = click(alice_link, DAY1)
    sale(customer, DAY1, 5000, commission=1000, status="refunded", deducted=400, credited=False)
    data = performance(owner, program, dateFrom="2025-05-18", dateTo="2025-05-18").json()["data"]
    assert (data["totals"]["sales"], data["totals"]["revenue_cents"], data["totals"]["commission_cents"]) == (
        1,
        5000,
        0,
    )
